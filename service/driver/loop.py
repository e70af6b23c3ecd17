"""The driver loop: one transaction per active run per tick, jobs sent after it commits."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session, sessionmaker

from contracts.jobs import EvaluateJob, ImproveJob
from service.db.models import Evaluation, Run, RunAgent, Step
from service.driver import budget
from service.driver.dispatch import Dispatcher
from service.driver.failures import failure_to_diagnose
from service.driver.parents import choose_parent
from service.driver.plan import RunPlan, stored_plan
from service.driver.stages import advance
from service.runs import IN_FLIGHT_STEP, wind_down
from service.steps import open_step

log = logging.getLogger("clade.driver")
# A job is sent again if no answer came within its hard time limit plus this margin.
REDISPATCH_MARGIN_S = 120
MAX_DISPATCHES = 3


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
            run_ids = list(session.scalars(select(Run.id).where(Run.status == "running")))
        for run_id in run_ids:
            outbox = Outbox()
            with self.sessions.begin() as session:
                run = session.get(Run, run_id, with_for_update=True)
                if run is not None and run.status == "running":
                    drive(session, run, outbox)
            for improve in outbox.improve:
                self.dispatcher.improve(improve)
            for evaluate in outbox.evaluate:
                self.dispatcher.evaluate(evaluate)


def drive(session: Session, run: Run, outbox: Outbox) -> None:
    """One step of a run's life, decided from what the database holds now."""
    plan = stored_plan(run)
    used = budget.spent(session, run)
    stop = budget.hard_stop(plan.budget, used)
    if stop is not None:
        log.info("run %s stops: %s", run.id, stop)
        wind_down(session, run=run, status="completed", reason=stop)
        return
    now = datetime.now(UTC)

    def send_evaluation(evaluation: Evaluation) -> None:
        if _count_dispatch(evaluation, now):
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
        else:
            evaluation.status, evaluation.resolved = "done", False
            evaluation.result = {"failure": f"no worker answered after {MAX_DISPATCHES} dispatches"}

    def send_step(step: Step) -> None:
        if _count_dispatch(step, now):
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
        else:
            step.status, step.reason = "failed", f"no worker answered after {MAX_DISPATCHES} dispatches"

    for member in session.scalars(
        select(RunAgent).where(RunAgent.run_id == run.id, RunAgent.status == "evaluating")
    ).all():
        advance(session, run, plan, member, send_evaluation)
    _resend_stale(session, run, plan, now, send_evaluation, send_step)

    in_flight = _steps_in_flight(session, run)
    if budget.children_exhausted(plan.budget, used):
        evaluating = session.scalar(
            select(func.count())
            .select_from(RunAgent)
            .where(RunAgent.run_id == run.id, RunAgent.status == "evaluating")
        )
        if in_flight == 0 and not evaluating:
            reason = (
                "evaluation finished (an evaluation-only run)"
                if plan.budget.max_children == 0
                else f"budget: max_children reached ({plan.budget.max_children})"
            )
            wind_down(session, run=run, status="completed", reason=reason)
        return
    opened = 0
    while in_flight < plan.parallelism and used.steps + opened < plan.budget.max_children:
        number = used.steps + opened + 1
        parent = choose_parent(session, run, plan, number)
        if parent is None:
            break  # the seed is still being scored
        step = open_step(session, run_id=run.id, parent_id=parent)
        session.flush()
        send_step(step)
        opened += 1
        in_flight += 1


def _count_dispatch(item: Step | Evaluation, now: datetime) -> bool:
    if item.dispatches >= MAX_DISPATCHES:
        return False
    item.dispatched_at, item.dispatches = now, item.dispatches + 1
    return True


def _resend_stale(
    session: Session,
    run: Run,
    plan: RunPlan,
    now: datetime,
    send_evaluation: Callable[[Evaluation], None],
    send_step: Callable[[Step], None],
) -> None:
    """Jobs lost with a broker or worker are sent again; ids make a second delivery harmless."""
    stale_eval = now - timedelta(seconds=plan.time_limits.evaluate_s + REDISPATCH_MARGIN_S)
    stale_step = now - timedelta(seconds=plan.time_limits.improve_s + REDISPATCH_MARGIN_S)
    for evaluation in session.scalars(
        select(Evaluation).where(
            Evaluation.run_id == run.id,
            Evaluation.status == "pending",
            or_(Evaluation.dispatched_at.is_(None), Evaluation.dispatched_at < stale_eval),
        )
    ).all():
        send_evaluation(evaluation)
    for step in session.scalars(
        select(Step).where(
            Step.run_id == run.id,
            Step.status == "pending",
            or_(Step.dispatched_at.is_(None), Step.dispatched_at < stale_step),
        )
    ).all():
        send_step(step)


def _steps_in_flight(session: Session, run: Run) -> int:
    return (
        session.scalar(
            select(func.count())
            .select_from(Step)
            .where(Step.run_id == run.id, Step.status.in_(IN_FLIGHT_STEP))
        )
        or 0
    )
