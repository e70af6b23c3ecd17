"""The driver loop: one transaction per running run per tick, jobs sent after it commits.

A tick takes each running run one move further along the path of its steps:

    advance   evaluating agents go through their stages (the missing evaluations are created)
    admit     agents whose evaluation is over are admitted or rejected, and their steps with them
    select    parents are chosen among the admitted agents, one per free step slot
    open      a step is opened for each parent
    dispatch  jobs not yet sent, or lost (unanswered past their time limit), go to the outbox

Admission comes before selection so that an agent admitted in this tick is a candidate, and
its step's slot free, at once; dispatch comes last so that every job decided in the tick is
sent in it. A spent budget stops the run before any of this; a run whose children are all
attempted completes once nothing is in flight.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session, sessionmaker

from contracts.jobs import EvaluateJob, ImproveJob
from service import lifecycle
from service.db.models import Evaluation, Run, RunAgent, Step
from service.driver import budget
from service.driver.dispatch import Dispatcher
from service.driver.failures import failure_to_diagnose
from service.driver.parents import choose_parent
from service.driver.plan import RunPlan, stored_plan
from service.driver.stages import Verdict, admit, advance
from service.lifecycle import EvaluationStatus, MemberStatus, RunStatus, StepStatus
from service.results import give_up_evaluation, give_up_step
from service.runs import complete
from service.steps import open_step

log = logging.getLogger("clade.driver")
# A job is sent again if no answer came within its hard time limit plus this margin.
REDISPATCH_MARGIN_S = 120
MAX_DISPATCHES = 3
NO_ANSWER = f"no worker answered after {MAX_DISPATCHES} dispatches"


@dataclass
class Outbox:
    """Jobs decided in a transaction, sent only after it commits (a worker may answer at once)."""

    improve: list[ImproveJob] = field(default_factory=list)
    evaluate: list[EvaluateJob] = field(default_factory=list)


class RunDriver:
    def __init__(self, *, sessions: sessionmaker[Session], dispatcher: Dispatcher, interval_s: float) -> None:
        self.sessions = sessions
        self.dispatcher = dispatcher
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="clade-driver", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.tick()
            self._stop.wait(self.interval_s)

    def tick(self) -> None:
        with self.sessions() as session:
            run_ids = list(session.scalars(select(Run.id).where(Run.status == RunStatus.RUNNING)))
        for run_id in run_ids:
            outbox = Outbox()
            with self.sessions.begin() as session:
                run = session.get(Run, run_id, with_for_update=True)
                if run is not None and run.status == RunStatus.RUNNING:
                    drive(session, run, outbox)
            for improve in outbox.improve:
                self.dispatcher.improve(improve)
            for evaluate in outbox.evaluate:
                self.dispatcher.evaluate(evaluate)


def drive(session: Session, run: Run, outbox: Outbox) -> None:
    """One tick of a run, decided from what the database holds now."""
    plan = stored_plan(run)
    used = budget.spent(session, run)
    stop = budget.hard_stop(plan.budget, used)
    if stop is not None:
        log.info("run %s stops: %s", run.id, stop)
        complete(session, run=run, reason=stop)
        return
    admit_agents(session, run, advance_agents(session, run, plan))
    if not budget.children_exhausted(plan.budget, used):
        open_steps(session, run, select_parents(session, run, plan, used))
    elif _steps_in_flight(session, run) == 0 and not _agents_evaluating(session, run):
        complete(session, run=run, reason=_completion_reason(plan))
        return
    dispatch_jobs(session, run, plan, used, outbox)


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
    free = min(plan.parallelism - _steps_in_flight(session, run), plan.budget.max_children - used.steps)
    parents: list[str] = []
    for number in range(used.steps + 1, used.steps + 1 + free):
        parent = choose_parent(session, run, plan, number)
        if parent is None:
            break  # the seed is still being scored
        parents.append(parent)
    return parents


def open_steps(session: Session, run: Run, parents: list[str]) -> None:
    for parent in parents:
        open_step(session, run_id=run.id, parent_id=parent)
    session.flush()


def dispatch_jobs(session: Session, run: Run, plan: RunPlan, used: budget.Spent, outbox: Outbox) -> None:
    """Jobs for the pending steps and evaluations not yet sent, or sent so long ago that the job
    was lost with a broker or worker (ids make a second delivery harmless). After
    MAX_DISPATCHES sends without an answer, the step fails and the evaluation counts as unresolved."""
    now = datetime.now(UTC)
    stale = now - timedelta(seconds=plan.time_limits.improve_s + REDISPATCH_MARGIN_S)
    for step in session.scalars(
        select(Step)
        .where(
            Step.run_id == run.id,
            Step.status == StepStatus.PENDING,
            or_(Step.dispatched_at.is_(None), Step.dispatched_at < stale),
        )
        .order_by(Step.number)
    ).all():
        if not _count_dispatch(step, now):
            give_up_step(step, reason=NO_ANSWER)
            continue
        outbox.improve.append(
            ImproveJob(
                run_id=run.id,
                limits=plan.limits,
                budget=budget.job_budget(plan.budget, used, evaluation=False),
                step_id=step.id,
                parent_id=step.parent_id,
                improver_id=plan.improver_for(step.parent_id),
                diagnose_model=plan.models.diagnose,
                improve_model=plan.models.improve,
                benchmark=plan.benchmark,
                failure=failure_to_diagnose(
                    session, run_id=run.id, parent_id=step.parent_id, step_id=step.id
                ),
            )
        )
    stale = now - timedelta(seconds=plan.time_limits.evaluate_s + REDISPATCH_MARGIN_S)
    for evaluation in session.scalars(
        select(Evaluation)
        .where(
            Evaluation.run_id == run.id,
            Evaluation.status == EvaluationStatus.PENDING,
            or_(Evaluation.dispatched_at.is_(None), Evaluation.dispatched_at < stale),
        )
        .order_by(Evaluation.created_at, Evaluation.id)
    ).all():
        if not _count_dispatch(evaluation, now):
            give_up_evaluation(evaluation, reason=NO_ANSWER)
            continue
        outbox.evaluate.append(
            EvaluateJob(
                run_id=run.id,
                limits=plan.limits,
                budget=budget.job_budget(plan.budget, used, evaluation=True),
                evaluation_id=evaluation.id,
                agent_id=evaluation.agent_id,
                task_id=evaluation.task_id,
                solve_model=plan.models.solve,
                benchmark=plan.benchmark,
            )
        )


def _count_dispatch(item: Step | Evaluation, now: datetime) -> bool:
    if item.dispatches >= MAX_DISPATCHES:
        return False
    item.dispatched_at, item.dispatches = now, item.dispatches + 1
    return True


def _completion_reason(plan: RunPlan) -> str:
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
