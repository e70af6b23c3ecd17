"""The run driver's thread: it ticks every run until stopped and survives whatever a tick raises.

What one tick does is `service.driver.tick`; the jobs it sends, `service.driver.jobs`.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from contracts.events import DriverError
from contracts.logs import log_ids
from service import events
from service.archive.store import Archive
from service.db.locks import locked
from service.db.models import Run
from service.driver.dispatch import Dispatcher
from service.driver.jobs import REDISPATCH_MARGIN_S, Outbox
from service.driver.tick import drive
from service.lifecycle import RunStatus

log = logging.getLogger("clade.driver")


@dataclass(frozen=True)
class DriverState:
    """The driver as `/api/health` reports it."""

    alive: bool
    started_at: datetime | None
    last_success_at: datetime | None  # the end of the last tick in which every running run moved
    consecutive_failures: int
    last_error: str | None
    retry_in_s: float  # the wait before the next tick: the interval, longer while ticks fail

    def problem(self, now: datetime, stale_after_s: float) -> str | None:
        """Why the driver is unhealthy, or None."""
        if not self.alive:
            return "the run driver's thread is not running"
        since = self.last_success_at or self.started_at
        if since is not None and (now - since).total_seconds() > stale_after_s:
            age = (now - since).total_seconds()
            return (
                f"the run driver's last successful tick was {age:.0f} s ago (stale after {stale_after_s:g} s;"
                f" {self.consecutive_failures} failures in a row; last error: {self.last_error})"
            )
        return None


@dataclass
class _Unrecorded:
    """A driver failure not yet written as a run event (the database could not take it)."""

    error: str
    since: datetime
    failed_ticks: int = 1


class RunDriver:
    """Ticks until stopped. A failure never ends the thread: a run whose move fails is rolled
    back, logged with its traceback and recorded as a `driver_error` event on that run, and
    the other runs still move in that tick; a tick that cannot even list the runs (the database
    unreachable) is logged and recorded on each running run once the database answers again.
    While ticks fail, the wait between them doubles up to `max_backoff_s`; a good tick resets it."""

    def __init__(
        self,
        *,
        sessions: sessionmaker[Session],
        dispatcher: Dispatcher,
        interval_s: float,
        max_backoff_s: float = 60.0,
        redispatch_margin_s: float = REDISPATCH_MARGIN_S,
        archive: Archive | None = None,  # for crossover merges; without it no step is a crossover
    ) -> None:
        self.sessions = sessions
        self.archive = archive
        self.dispatcher = dispatcher
        self.interval_s = interval_s
        self.max_backoff_s = max(interval_s, max_backoff_s)
        self.redispatch_margin_s = redispatch_margin_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()  # the state below is read by API threads
        self._started_at: datetime | None = None
        self._last_success_at: datetime | None = None
        self._failures = 0
        self._last_error: str | None = None
        self._outage: _Unrecorded | None = None  # tick-wide failures, recorded on the runs later
        self._unrecorded: dict[str, _Unrecorded] = {}  # per run, when recording it failed too

    def start(self) -> None:
        self._started_at = datetime.now(UTC)
        self._thread = threading.Thread(target=self._loop, name="clade-driver", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def state(self) -> DriverState:
        with self._lock:
            return DriverState(
                alive=self._thread is not None and self._thread.is_alive(),
                started_at=self._started_at,
                last_success_at=self._last_success_at,
                consecutive_failures=self._failures,
                last_error=self._last_error,
                retry_in_s=self._delay_s(),
            )

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.run_once()
            with self._lock:
                delay = self._delay_s()
            self._stop.wait(delay)

    def _delay_s(self) -> float:
        if self._failures == 0:
            return self.interval_s
        return min(self.max_backoff_s, self.interval_s * 2.0 ** min(self._failures, 32))

    def run_once(self) -> bool:
        """One supervised tick: whatever fails is logged, counted and recorded, never raised."""
        try:
            failures = self.tick()
        except Exception as exc:  # the supervisor: logged with the traceback, counted, retried later
            log.exception("run driver: tick failed")
            error = describe(exc)
            if self._outage is None:  # only this thread touches it
                self._outage = _Unrecorded(error=error, since=datetime.now(UTC))
            else:
                self._outage.failed_ticks += 1
            self._failed(error)
            return False
        if failures:
            self._failed(failures[-1])
            return False
        with self._lock:
            self._failures, self._last_error = 0, None
            self._last_success_at = datetime.now(UTC)
        return True

    def _failed(self, error: str) -> None:
        with self._lock:
            self._failures += 1
            self._last_error = error

    def tick(self) -> list[str]:
        """Move every running run one step; the errors of the runs that could not move.

        Raises only when the running runs cannot be listed."""
        with self.sessions() as session:
            run_ids = list(session.scalars(select(Run.id).where(Run.status == RunStatus.RUNNING)))
        self._record_backlog(run_ids)
        errors: list[str] = []
        for run_id in run_ids:
            with log_ids(run_id=run_id):
                try:
                    self._drive(run_id)
                except Exception as exc:  # one run's failure must not hold up the others
                    log.exception("run driver: run %s failed", run_id)
                    errors.append(f"run {run_id}: {describe(exc)}")
                    self._record(run_id, describe(exc))
        return errors

    def _drive(self, run_id: str) -> None:
        outbox = Outbox()
        with self.sessions.begin() as session:
            run = locked(session, Run, run_id)
            if run is not None and run.status == RunStatus.RUNNING:
                drive(
                    session, run, outbox, redispatch_margin_s=self.redispatch_margin_s, archive=self.archive
                )
        if self.archive is not None:
            for sha in outbox.refs:
                self.archive.git.set_agent_ref(sha)
        for improve in outbox.improve:
            self.dispatcher.improve(improve)
        for evaluate in outbox.evaluate:
            self.dispatcher.evaluate(evaluate)

    def _record(self, run_id: str, error: str) -> None:
        """A `driver_error` event on the run; kept for a later tick if the database refuses it too."""
        failure = self._unrecorded.pop(run_id, None)
        if failure is None:
            failure = _Unrecorded(error=error, since=datetime.now(UTC))
        else:  # keep the first error, count the rest
            failure.failed_ticks += 1
        if not self._write([run_id], failure, scope="run"):
            self._unrecorded[run_id] = failure

    def _record_backlog(self, run_ids: list[str]) -> None:
        """Failures the database could not take when they happened, now that it answers."""
        if self._outage is not None and self._write(run_ids, self._outage, scope="driver"):
            self._outage = None
        for run_id, failure in list(self._unrecorded.items()):
            if self._write([run_id], failure, scope="run"):
                del self._unrecorded[run_id]

    def _write(self, run_ids: list[str], failure: _Unrecorded, *, scope: Literal["run", "driver"]) -> bool:
        payload = DriverError(
            scope=scope,  # "run": this run's move failed; "driver": no run could be driven
            error=failure.error,
            since=failure.since,
            failed_ticks=failure.failed_ticks,
        )
        try:
            with self.sessions.begin() as session:
                for run_id in run_ids:
                    events.emit(session, payload, run_id=run_id)
        except SQLAlchemyError:
            log.exception("run driver: could not record a failure yet; will try again")
            return False
        return True


def describe(exc: BaseException) -> str:
    """An error in one line, short enough for an event and a health answer."""
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0] if lines else ''}"
    return text if len(text) <= 500 else text[:497] + "..."
