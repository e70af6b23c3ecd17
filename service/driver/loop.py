"""The driver loop: one transaction per running run per tick, jobs sent after it commits.

A tick takes each running run one move further along the path of its steps:

    advance   evaluating agents go through their stages (the missing evaluations are created)
    admit     agents whose evaluation is over are admitted or rejected, and their steps with them
    epoch     re-scored agents advance; the next epoch begins when its boundary is due
    select    parents are chosen among the current epoch's admitted agents, one per free slot
    open      a step is opened for each parent
    dispatch  jobs not yet sent, or lost (unanswered past their time limit), go to the outbox

Admission comes before selection so that an agent admitted in this tick is a candidate, and
its step's slot free, at once; dispatch comes last so that every job decided in the tick is
sent in it. A spent budget stops the run before any of this; a run whose children are all
attempted completes once nothing is in flight (and, with a held-out set, once its top agents
are scored on it: `service.driver.heldout`). Every job sent carries a lease on the run's
money and tokens (`service.leases`); a run whose jobs find no room left in its budget, with no
lease out, completes.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, or_, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from contracts.jobs import Budget, EvaluateJob, ImproveJob
from contracts.logs import log_ids
from service import job_secrets, leases, lifecycle
from service.archive.store import Archive
from service.db.models import Evaluation, Event, Run, RunAgent, Step
from service.driver import budget, crossover, epochs, heldout, search
from service.driver.dispatch import Dispatcher
from service.driver.failures import failure_to_diagnose, parent_records
from service.driver.parents import choose_parent
from service.driver.stages import Verdict, admit, advance
from service.lifecycle import EvaluationStatus, MemberStatus, RunStatus, StepStatus
from service.plan import RunPlan, stored_plan
from service.results import give_up_evaluation, give_up_step
from service.runs import complete
from service.steps import improve_kind, open_step

log = logging.getLogger("clade.driver")
# A job is sent again if no answer came within its hard time limit plus this margin
# (CLADE_DRIVER_REDISPATCH_MARGIN_S).
REDISPATCH_MARGIN_S = 120.0
MAX_DISPATCHES = 3
NO_ANSWER = f"no worker answered after {MAX_DISPATCHES} dispatches"


@dataclass
class Outbox:
    """Jobs decided in a transaction, sent only after it commits (a worker may answer at once)."""

    improve: list[ImproveJob] = field(default_factory=list)
    evaluate: list[EvaluateJob] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)  # agents made in the tick (crossover merges)


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
            run = session.get(Run, run_id, with_for_update=True)
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

    def _write(self, run_ids: list[str], failure: _Unrecorded, *, scope: str) -> bool:
        payload = {
            "scope": scope,  # "run": this run's move failed; "driver": no run could be driven
            "error": failure.error,
            "since": failure.since.isoformat(),
            "failed_ticks": failure.failed_ticks,
        }
        try:
            with self.sessions.begin() as session:
                session.add_all(Event(run_id=r, kind="driver_error", payload=payload) for r in run_ids)
        except SQLAlchemyError:
            log.exception("run driver: could not record a failure yet; will try again")
            return False
        return True


def describe(exc: BaseException) -> str:
    """An error in one line, short enough for an event and a health answer."""
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0] if lines else ''}"
    return text if len(text) <= 500 else text[:497] + "..."


def drive(
    session: Session,
    run: Run,
    outbox: Outbox,
    *,
    redispatch_margin_s: float = REDISPATCH_MARGIN_S,
    archive: Archive | None = None,
) -> None:
    """One tick of a run, decided from what the database holds now."""
    plan = stored_plan(run)
    used = budget.spent(session, run)
    stop = budget.hard_stop(plan.budget, used)
    if stop is not None:
        log.info("run %s stops: %s", run.id, stop)
        complete(session, run=run, reason=stop)
        return
    admit_agents(session, run, advance_agents(session, run, plan))
    search.after_admission(session, run, plan)
    epochs.move(session, run, plan, used.steps)
    reserved = heldout.reserve(session, run, plan) if plan.budget.max_evaluations is not None else 0
    if not budget.children_exhausted(plan.budget, used, reserved_evaluations=reserved):
        open_steps(session, run, select_parents(session, run, plan, used), improver_mode=plan.improver.mode)
        search.after_opening(session, run, plan)
        if archive is not None:
            crossover.pair_steps(session, run, plan, first_number=used.steps + 1)
    elif (
        _steps_in_flight(session, run) == 0
        and not _agents_evaluating(session, run)
        and not epochs.rescoring(session, run)
        and heldout.finished(session, run, plan)  # the top agents scored on held-out tasks first
    ):
        complete(session, run=run, reason=_completion_reason(plan, used, reserved))
        return
    if archive is not None:
        outbox.refs += crossover.merge_pending(session, run, plan, archive)
    starved = dispatch_jobs(
        session, run, plan, used, outbox, redispatch_margin_s=redispatch_margin_s, archive=archive
    )
    if starved is not None and leases.outstanding(session, run_id=run.id).leases == 0:
        # Jobs wait for room that only a lease coming back could make, and none is out.
        reason = budget.starved_reason(plan.budget, used, starved)
        log.info("run %s stops: %s", run.id, reason)
        complete(session, run=run, reason=reason)


def advance_agents(session: Session, run: Run, plan: RunPlan) -> list[Verdict]:
    """Each evaluating agent as far through its stages as its results allow; the finished ones."""
    members = session.scalars(
        select(RunAgent).where(RunAgent.run_id == run.id, RunAgent.status == MemberStatus.EVALUATING)
    ).all()
    return [verdict for member in members if (verdict := advance(session, run, plan, member)) is not None]


def admit_agents(session: Session, run: Run, verdicts: list[Verdict]) -> None:
    for verdict in verdicts:
        admit(session, run, verdict)


def select_parents(session: Session, run: Run, plan: RunPlan, used: budget.Spent) -> list[str]:
    """A parent for each free step slot, within the children budget (none until one is admitted)."""
    free = min(
        plan.parallelism - _steps_in_flight(session, run),
        plan.budget.max_children - used.steps,
        epochs.steps_before_boundary(run, plan, used.steps),
    )
    parents: list[str] = []
    for number in range(used.steps + 1, used.steps + 1 + free):
        parent = choose_parent(session, run, plan, number, parents)
        if parent is None:
            break  # the seed is still being scored (or a group run's round is not over)
        parents.append(parent)
    return parents


def open_steps(session: Session, run: Run, parents: list[str], *, improver_mode: str = "self") -> None:
    for parent in parents:
        kind = improve_kind(session, mode=improver_mode, parent_id=parent)
        open_step(session, run_id=run.id, parent_id=parent, kind=kind)
    session.flush()


def dispatch_jobs(
    session: Session,
    run: Run,
    plan: RunPlan,
    used: budget.Spent,
    outbox: Outbox,
    *,
    redispatch_margin_s: float = REDISPATCH_MARGIN_S,
    archive: Archive | None = None,
) -> budget.Room | None:
    """Jobs for the pending steps and evaluations not yet sent, or sent so long ago that the job
    was lost with a broker or worker (ids make a second delivery harmless), each with a lease
    on the run's budget; a lost job's lease expires as it is sent again. After MAX_DISPATCHES
    sends without an answer, the step fails and the evaluation counts as unresolved.

    Returns the room left if some job was held back for want of it, else None."""
    now = datetime.now(UTC)
    stale_step = now - timedelta(seconds=plan.time_limits.improve_s + redispatch_margin_s)
    steps = session.scalars(
        select(Step)
        .where(
            Step.run_id == run.id,
            Step.status == StepStatus.PENDING,
            or_(Step.dispatched_at.is_(None), Step.dispatched_at < stale_step),
        )
        .order_by(Step.number)
    ).all()
    stale_evaluation = now - timedelta(seconds=plan.time_limits.evaluate_s + redispatch_margin_s)
    evaluations = session.scalars(
        select(Evaluation)
        .where(
            Evaluation.run_id == run.id,
            Evaluation.status == EvaluationStatus.PENDING,
            or_(Evaluation.dispatched_at.is_(None), Evaluation.dispatched_at < stale_evaluation),
        )
        .order_by(Evaluation.created_at, Evaluation.id)
    ).all()
    for step in steps:
        if step.dispatched_at is not None:
            leases.expire(session, step_id=step.id)
    for evaluation in evaluations:
        if evaluation.dispatched_at is not None:
            leases.expire(session, evaluation_id=evaluation.id)
    slicer = budget.LeaseSlicer(
        plan.budget,
        budget.room(session, run, plan.budget, used),
        jobs=len(steps) + len(evaluations),
        parallelism=plan.parallelism,
    )
    for step in steps:
        if step.dispatches >= MAX_DISPATCHES:
            give_up_step(session, step, reason=NO_ANSWER)
            continue
        lease = _lease_for(session, slicer, step, now)
        if lease is None:
            continue
        hyper = step.kind == "hyper"
        outbox.improve.append(
            ImproveJob(
                run_id=run.id,
                limits=plan.limits,
                budget=lease,
                secret=job_secrets.issue(step),  # a new one each dispatch; the row keeps its hash
                step_id=step.id,
                parent_id=step.parent_id,
                improver_id=plan.improver_for(step.parent_id),
                diagnose_model=plan.models.diagnose,
                improve_model=plan.models.improve,
                benchmark=plan.benchmark,
                failure=None
                if hyper
                else failure_to_diagnose(session, run_id=run.id, parent_id=step.parent_id, step_id=step.id),
                records=parent_records(session, run_id=run.id, parent_id=step.parent_id) if hyper else None,
                crossover=crossover.job_part(archive, step),
                experience=search.experience_text(session, run, plan),
            )
        )
    for evaluation in evaluations:
        if evaluation.dispatches >= MAX_DISPATCHES:
            give_up_evaluation(session, evaluation, reason=NO_ANSWER)
            continue
        lease = _lease_for(session, slicer, evaluation, now)
        if lease is None:
            continue
        outbox.evaluate.append(
            EvaluateJob(
                run_id=run.id,
                limits=plan.limits,
                budget=lease,
                secret=job_secrets.issue(evaluation),
                evaluation_id=evaluation.id,
                agent_id=evaluation.agent_id,
                task_id=evaluation.task_id,
                solve_model=plan.models.solve,
                benchmark=plan.benchmark,
                judge=plan.epoch(evaluation.epoch).judge,
            )
        )
    return slicer.room if slicer.starved else None


def _count_dispatch(item: Step | Evaluation, now: datetime) -> None:
    item.dispatched_at, item.dispatches = now, item.dispatches + 1


def _lease_for(
    session: Session, slicer: budget.LeaseSlicer, item: Step | Evaluation, now: datetime
) -> Budget | None:
    """The budget slice this dispatch of `item` may spend, recorded as its lease; None while the
    run's room cannot hold one (the job waits for a later tick, its dispatch not counted)."""
    evaluation = isinstance(item, Evaluation)
    lease = slicer.next(evaluation=evaluation)
    if lease is None:
        return None
    _count_dispatch(item, now)
    leases.grant(
        session,
        run_id=item.run_id,
        step_id=None if evaluation else item.id,
        evaluation_id=item.id if evaluation else None,
        usd=lease.run_remaining_usd,
        tokens=lease.run_remaining_tokens,
    )
    return lease


def _completion_reason(plan: RunPlan, used: budget.Spent, reserved: int) -> str:
    limit = plan.budget.max_evaluations
    if limit is not None and used.steps < plan.budget.max_children and plan.budget.max_children > 0:
        held = f", {reserved} kept for the held-out phase" if reserved else ""
        return f"budget: max_evaluations reached ({used.evaluations} of {limit}{held})"
    if plan.budget.max_children == 0:
        return "evaluation finished (an evaluation-only run)"
    return f"budget: max_children reached ({plan.budget.max_children})"


def _steps_in_flight(session: Session, run: Run) -> int:
    return (
        session.scalar(
            select(func.count())
            .select_from(Step)
            .where(Step.run_id == run.id, Step.status.in_(lifecycle.STEP_IN_FLIGHT))
        )
        or 0
    )


def _agents_evaluating(session: Session, run: Run) -> bool:
    return bool(
        session.scalar(
            select(func.count())
            .select_from(RunAgent)
            .where(RunAgent.run_id == run.id, RunAgent.status == MemberStatus.EVALUATING)
        )
    )
