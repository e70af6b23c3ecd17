"""The service's Prometheus metrics, in a registry of its own (one per app, so tests can make many).

Two kinds of figures:

- counts read from the database at scrape time (runs, steps and evaluations by status: one
  grouped count per table on indexed columns), the broker's queue depth and the run driver's
  tick age;
- durations and LLM usage observed as records complete: a listener on the app's session
  factory notes, at flush, each step or evaluation whose `finished_at` was set and each usage row
  added, and counts them once their transaction commits (a rolled-back one counts nothing). The
  driver and the worker endpoints write through the same factory, so nothing is missed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import event, func, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, SessionTransaction, sessionmaker
from sqlalchemy.orm.attributes import instance_state

from contracts.celery_app import QUEUE
from contracts.settings import Settings
from service import lifecycle
from service.db.models import Evaluation, LLMUsage, Run, Step
from service.driver.loop import DriverState
from service.lifecycle import EvaluationStatus, RunStatus, StepStatus

log = logging.getLogger("clade.metrics")
# Seconds: from a few (a cached evaluation, a quick rejection) to hours (a long improvement).
DURATION_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, float("inf"))
# kombu's Redis transport keeps messages of priority p > 0 in "<queue>\x06\x16<p>".
_REDIS_PRIORITY_SUFFIXES = ("", "\x06\x163", "\x06\x166", "\x06\x169")
_PENDING_KEY = "clade_metrics_pending"


@dataclass
class _Pending:
    """What one session's flushes completed, counted when (and only if) it commits."""

    steps: list[tuple[str, float]] = field(default_factory=list)  # (status, seconds)
    evaluations: list[tuple[str, float]] = field(default_factory=list)  # (outcome, seconds)
    usage: list[tuple[str, str, int, int, float]] = field(default_factory=list)


class ServiceMetrics:
    """The registry `/metrics` serves, and the instruments fed by the session listener."""

    def __init__(
        self,
        *,
        settings: Settings,
        sessions: sessionmaker[Session],
        driver_state: Callable[[], DriverState] | None,
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.step_duration = Histogram(
            "clade_step_duration_seconds",
            "Steps from opening to their end, by the status they ended in",
            ["status"],
            buckets=DURATION_BUCKETS,
            registry=self.registry,
        )
        self.evaluation_duration = Histogram(
            "clade_evaluation_duration_seconds",
            "Evaluations from dispatch to their recorded result, by outcome",
            ["outcome"],
            buckets=DURATION_BUCKETS,
            registry=self.registry,
        )
        self.llm_tokens = Counter(
            "clade_llm_tokens",
            "LLM tokens recorded, by purpose, model and kind (prompt or completion)",
            ["purpose", "model", "kind"],
            registry=self.registry,
        )
        self.llm_cost = Counter(
            "clade_llm_cost_usd",
            "LLM cost recorded in US dollars, by purpose and model",
            ["purpose", "model"],
            registry=self.registry,
        )
        self.llm_calls = Counter(
            "clade_llm_calls",
            "LLM calls recorded, by purpose and model",
            ["purpose", "model"],
            registry=self.registry,
        )
        # Every label value shown from the start at zero, so a dashboard never meets an absent series.
        for step_status in lifecycle.STEP_FINISHED:
            self.step_duration.labels(status=step_status)
        for outcome in ("resolved", "unresolved", "infrastructure_failure"):
            self.evaluation_duration.labels(outcome=outcome)
        self.registry.register(_StateCollector(settings, sessions, driver_state))
        event.listen(sessions, "after_flush", self._after_flush)
        event.listen(sessions, "after_commit", self._after_commit)
        event.listen(sessions, "after_transaction_end", self._after_transaction_end)

    def _after_flush(self, session: Session, _context: Any) -> None:
        pending: _Pending = session.info.setdefault(_PENDING_KEY, _Pending())
        for obj in (*session.new, *session.dirty):
            if isinstance(obj, Step):
                seconds = _finished_now(obj, "created_at")
                if seconds is not None:
                    pending.steps.append((obj.status, seconds))
            elif isinstance(obj, Evaluation):
                seconds = _finished_now(obj, "dispatched_at", "created_at")
                if seconds is not None:
                    pending.evaluations.append((_outcome(obj), seconds))
            elif isinstance(obj, LLMUsage) and obj in session.new:
                pending.usage.append(
                    (obj.purpose, obj.model, obj.prompt_tokens, obj.completion_tokens, obj.cost_usd)
                )

    def _after_commit(self, session: Session) -> None:
        pending: _Pending | None = session.info.pop(_PENDING_KEY, None)
        if pending is None:
            return
        for status, seconds in pending.steps:
            self.step_duration.labels(status=status).observe(seconds)
        for outcome, seconds in pending.evaluations:
            self.evaluation_duration.labels(outcome=outcome).observe(seconds)
        for purpose, model, prompt, completion, cost in pending.usage:
            self.llm_calls.labels(purpose=purpose, model=model).inc()
            self.llm_tokens.labels(purpose=purpose, model=model, kind="prompt").inc(prompt)
            self.llm_tokens.labels(purpose=purpose, model=model, kind="completion").inc(completion)
            self.llm_cost.labels(purpose=purpose, model=model).inc(cost)

    def _after_transaction_end(self, session: Session, transaction: SessionTransaction) -> None:
        if transaction.parent is None:  # rolled back or closed uncommitted: nothing happened
            session.info.pop(_PENDING_KEY, None)


def _finished_now(obj: Step | Evaluation, *starts: str) -> float | None:
    """Seconds from the first known start to `finished_at`, if this flush set `finished_at`."""
    state = instance_state(obj)
    history = state.attrs.finished_at.history
    finished = next((value for value in history.added or () if value is not None), None)
    if finished is None or any(value is not None for value in history.deleted or ()):
        return None
    for name in starts:  # read from the loaded state: no query in the middle of a flush
        start = state.dict.get(name)
        if isinstance(start, datetime):
            return max(0.0, (_aware(finished) - _aware(start)).total_seconds())
    return None


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _outcome(evaluation: Evaluation) -> str:
    result = evaluation.result or {}
    if result.get("infrastructure_failure"):
        return "infrastructure_failure"
    return "resolved" if evaluation.resolved else "unresolved"


class _StateCollector(Collector):
    """Figures read when Prometheus scrapes: counts by status, queue depth, driver tick age."""

    def __init__(
        self,
        settings: Settings,
        sessions: sessionmaker[Session],
        driver_state: Callable[[], DriverState] | None,
    ) -> None:
        self.settings = settings
        self.sessions = sessions
        self.driver_state = driver_state
        self._redis: redis.Redis | None = None

    def collect(self) -> Iterator[Metric]:
        yield from self._counts()
        yield from self._queue()
        yield from self._driver()

    def _counts(self) -> Iterator[Metric]:
        tables: tuple[tuple[str, str, type[Run] | type[Step] | type[Evaluation], list[str]], ...] = (
            ("clade_runs", "Runs by status", Run, list(RunStatus)),
            ("clade_steps", "Steps by status", Step, list(StepStatus)),
            ("clade_evaluations", "Evaluations by status", Evaluation, list(EvaluationStatus)),
        )
        up = GaugeMetricFamily("clade_database_up", "1 when the database answered this scrape")
        try:
            with self.sessions() as session:
                counted = [
                    (name, text, statuses, _count_by_status(session, model))
                    for name, text, model, statuses in tables
                ]
        except SQLAlchemyError as exc:  # a scrape must answer while the database is down
            log.warning("metrics: the database did not answer: %s", exc)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        for name, text, statuses, counts in counted:
            family = GaugeMetricFamily(name, text, labels=["status"])
            for status in dict.fromkeys([*statuses, *counts]):
                family.add_metric([status], counts.get(status, 0))
            yield family

    def _queue(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("clade_broker_up", "1 when the broker's queue depth could be read")
        depth = GaugeMetricFamily("clade_queue_depth", "Jobs waiting in the broker's queue", labels=["queue"])
        url = self.settings.resolved_broker_url
        try:
            if url.startswith("filesystem://"):
                waiting = _file_queue_depth(self.settings.broker_folder / "queue", QUEUE)
            elif url.startswith(("redis://", "rediss://")):
                waiting = self._redis_queue_depth(url, QUEUE)
            else:
                return  # another transport: no depth to report
        except (redis.RedisError, OSError) as exc:  # never a 500: the depth is absent, broker_up says why
            log.warning("metrics: the broker did not answer: %s", exc)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        depth.add_metric([QUEUE], waiting)
        yield up
        yield depth

    def _redis_queue_depth(self, url: str, queue: str) -> int:
        if self._redis is None:
            self._redis = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        return sum(int(self._redis.llen(queue + suffix)) for suffix in _REDIS_PRIORITY_SUFFIXES)

    def _driver(self) -> Iterator[Metric]:
        if self.driver_state is None:
            return
        state = self.driver_state()
        alive = GaugeMetricFamily("clade_driver_up", "1 while the run driver's thread runs")
        alive.add_metric([], 1 if state.alive else 0)
        yield alive
        since = state.last_success_at or state.started_at
        if since is not None:
            age = GaugeMetricFamily(
                "clade_driver_tick_age_seconds",
                "Seconds since the run driver's last successful tick (since its start before the first)",
            )
            age.add_metric([], max(0.0, (datetime.now(UTC) - since).total_seconds()))
            yield age
        failures = GaugeMetricFamily(
            "clade_driver_consecutive_failures", "Run driver ticks that failed in a row"
        )
        failures.add_metric([], state.consecutive_failures)
        yield failures


def _count_by_status(session: Session, model: type[Run] | type[Step] | type[Evaluation]) -> dict[str, int]:
    rows = session.execute(select(model.status, func.count()).group_by(model.status))
    return {status: count for status, count in rows}


def _file_queue_depth(folder: Path, queue: str) -> int:
    """Messages waiting for `queue` in kombu's filesystem transport: files `<time>_<id>.<queue>.msg`."""
    suffix = f"{queue}.msg"
    if not folder.is_dir():  # nothing sent yet: the transport makes the folder on first use
        return 0
    return sum(1 for entry in folder.iterdir() if entry.name.partition(".")[2] == suffix)
