"""The jobs a tick sends: for the pending steps and evaluations not yet sent, or lost on the way.

Jobs are decided inside the tick's transaction and kept in an `Outbox`, sent only after it
commits (a worker may answer at once). Each carries a lease on the run's budget.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from contracts.jobs import Budget, EvaluateJob, ImproveJob
from contracts.vocabulary import StepKind
from service import job_secrets, leases
from service.db.models import Evaluation, Run, Step
from service.driver import budget
from service.driver.failures import failure_to_diagnose, parent_records
from service.driver.ledger import step_view
from service.driver.model_choice import improve_choice
from service.lifecycle import EvaluationStatus, StepStatus
from service.plan import RunPlan
from service.results import give_up_evaluation, give_up_step
from service.selection.policy import ImproveParts, RunScope, SearchPolicy

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


def dispatch_jobs(
    session: Session,
    run: Run,
    plan: RunPlan,
    used: budget.Spent,
    outbox: Outbox,
    *,
    policy: SearchPolicy,
    scope: RunScope,
    redispatch_margin_s: float = REDISPATCH_MARGIN_S,
) -> budget.Room | None:
    """Jobs for the pending steps and evaluations not yet sent, or sent so long ago that the job
    was lost with a broker or worker (ids make a second delivery harmless), each with a lease
    on the run's budget; a lost job's lease expires as it is sent again. After MAX_DISPATCHES
    sends without an answer, the step fails and the evaluation counts as unresolved.

    Returns the room left if some job was held back for want of it, else None."""
    now = datetime.now(UTC)
    steps = _due(
        session,
        Step,
        run,
        pending=StepStatus.PENDING,
        stale_after_s=plan.time_limits.improve_s + redispatch_margin_s,
        now=now,
    )
    evaluations = _due(
        session,
        Evaluation,
        run,
        pending=EvaluationStatus.PENDING,
        stale_after_s=plan.time_limits.evaluate_s + redispatch_margin_s,
        now=now,
    )
    slicer = budget.LeaseSlicer(
        plan.budget,
        budget.room(session, run, plan.budget, used),  # after the lost jobs' leases expired
        jobs=len(steps) + len(evaluations),
        parallelism=plan.parallelism,
    )
    for step, lease in _leased(session, slicer, steps, now):
        parts = policy.improve_parts(scope, step_view(step))
        outbox.improve.append(improve_job(session, run, plan, step, lease, parts))
    for evaluation, lease in _leased(session, slicer, evaluations, now):
        outbox.evaluate.append(evaluate_job(run, plan, evaluation, lease))
    return slicer.room if slicer.starved else None


def improve_job(
    session: Session, run: Run, plan: RunPlan, step: Step, lease: Budget, parts: ImproveParts
) -> ImproveJob:
    """The job that makes `step`'s child; `parts` are what the run's policies add to it."""
    hyper = step.kind == StepKind.HYPER
    choice = improve_choice(session, run, plan, step)
    return ImproveJob(
        run_id=run.id,
        limits=plan.limits,
        budget=lease,
        prices=plan.models.prices,
        secret=job_secrets.issue(step),  # a new one each dispatch; the row keeps its hash
        step_id=step.id,
        parent_id=step.parent_id,
        improver_id=plan.improver_for(step.parent_id),
        diagnose_model=plan.models.primary("diagnose"),
        diagnose_fallbacks=list(plan.models.chain("diagnose")[1:]),
        improve_model=choice["model"],
        improve_fallbacks=list(choice["fallbacks"]),
        benchmark=plan.benchmark,
        failure=None
        if hyper
        else failure_to_diagnose(session, run_id=run.id, parent_id=step.parent_id, step_id=step.id),
        records=parent_records(session, run_id=run.id, parent_id=step.parent_id) if hyper else None,
        crossover=parts.crossover,
        experience=parts.experience,
    )


def evaluate_job(run: Run, plan: RunPlan, evaluation: Evaluation, lease: Budget) -> EvaluateJob:
    return EvaluateJob(
        run_id=run.id,
        limits=plan.limits,
        budget=lease,
        prices=plan.models.prices,
        secret=job_secrets.issue(evaluation),
        evaluation_id=evaluation.id,
        agent_id=evaluation.agent_id,
        task_id=evaluation.task_id,
        solve_model=plan.models.primary("solve"),
        solve_fallbacks=list(plan.models.chain("solve")[1:]),
        benchmark=plan.benchmark,
        judge=plan.epoch(evaluation.epoch).judge,
    )


Job = TypeVar("Job", Step, Evaluation)


def _due(
    session: Session,
    model: type[Job],
    run: Run,
    *,
    pending: StepStatus | EvaluationStatus,
    stale_after_s: float,
    now: datetime,
) -> list[Job]:
    """The run's pending `model` rows to send: never sent, or sent longer ago than `stale_after_s`
    (the job was lost: its lease expires here, before the run's room is measured)."""
    stale = now - timedelta(seconds=stale_after_s)
    order = (Step.number,) if model is Step else (Evaluation.created_at, Evaluation.id)
    rows = session.scalars(
        select(model)
        .where(
            model.run_id == run.id,
            model.status == pending,
            or_(model.dispatched_at.is_(None), model.dispatched_at < stale),
        )
        .order_by(*order)
    ).all()
    for row in rows:
        if row.dispatched_at is not None:
            _expire_lease(session, row)
    return list(rows)


def _leased(
    session: Session, slicer: budget.LeaseSlicer, rows: list[Job], now: datetime
) -> Iterator[tuple[Job, Budget]]:
    """Each row with the lease its dispatch may spend; rows past MAX_DISPATCHES are given up,
    rows the run's room cannot hold yet wait for a later tick."""
    for row in rows:
        if row.dispatches >= MAX_DISPATCHES:
            _give_up(session, row)
            continue
        lease = _lease_for(session, slicer, row, now)
        if lease is not None:
            yield row, lease


def _expire_lease(session: Session, row: Step | Evaluation) -> None:
    if isinstance(row, Evaluation):
        leases.expire(session, evaluation_id=row.id)
    else:
        leases.expire(session, step_id=row.id)


def _give_up(session: Session, row: Step | Evaluation) -> None:
    if isinstance(row, Evaluation):
        give_up_evaluation(session, row, reason=NO_ANSWER)
    else:
        give_up_step(session, row, reason=NO_ANSWER)


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
