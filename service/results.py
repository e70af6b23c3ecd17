"""Recording what workers hand back: evaluation results, usage, and steps that produced no child."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy.orm import Session

from contracts.errors import ConflictError, NotFoundError
from contracts.events import EvaluationDone, StepRejected
from contracts.records import EvaluationResult, EvaluationSubmission, UsageRecord
from service import events, leases, lifecycle
from service.db.locks import locked
from service.db.models import Evaluation, Event, LLMUsage, Step
from service.worker_tokens import WorkerIdentity


def record_evaluation(
    session: Session,
    *,
    evaluation_id: str,
    submission: EvaluationSubmission,
    worker: WorkerIdentity | None = None,
) -> Evaluation:
    """Store one evaluation's result and usage, and the worker that sent it; a repeated delivery
    changes nothing."""
    evaluation = locked(session, Evaluation, evaluation_id)
    if evaluation is None:
        raise NotFoundError(f"evaluation {evaluation_id} not found")
    if not lifecycle.finish_evaluation.allows(evaluation):  # done already, or cancelled with its run
        return evaluation
    result = submission.result
    lifecycle.finish_evaluation(evaluation)
    evaluation.resolved = result.resolved
    evaluation.result = result.model_dump(mode="json")
    evaluation.prompt_tokens = sum(u.prompt_tokens for u in submission.usage)
    evaluation.completion_tokens = sum(u.completion_tokens for u in submission.usage)
    evaluation.cost_usd = sum(u.cost_usd for u in submission.usage)
    evaluation.finished_at = datetime.now(UTC)
    if worker is not None:
        worker.sign(evaluation)
    record_usage(
        session,
        usage=submission.usage,
        run_id=evaluation.run_id,
        agent_id=evaluation.agent_id,
        evaluation_id=evaluation.id,
    )
    leases.settle(session, usage=submission.usage, evaluation_id=evaluation.id)
    session.add(
        evaluation_done(
            evaluation,
            worker=worker.name if worker is not None else None,
            infrastructure_failure=result.infrastructure_failure or None,
            warnings=result.warnings or None,
        )
    )
    return evaluation


def evaluation_done(
    evaluation: Evaluation,
    *,
    worker: str | None = None,
    reused_from: str | None = None,
    infrastructure_failure: str | None = None,
    warnings: list[str] | None = None,
) -> Event:
    """The `evaluation_done` event of a finished evaluation: measured by `worker`, or reused."""
    payload = EvaluationDone(
        evaluation_id=evaluation.id,
        agent_id=evaluation.agent_id,
        task_id=evaluation.task_id,
        resolved=evaluation.resolved,
        reused_from=reused_from,
        worker=worker,
        infrastructure_failure=infrastructure_failure,
        warnings=warnings,
    )
    return events.event_row(payload, run_id=evaluation.run_id)


def give_up_evaluation(session: Session, evaluation: Evaluation, *, reason: str) -> None:
    """An evaluation no worker answered: done and unresolved, with a result that says why."""
    lifecycle.finish_evaluation(evaluation)
    leases.expire(session, evaluation_id=evaluation.id)
    evaluation.resolved = False
    evaluation.result = EvaluationResult(resolved=False, infrastructure_failure=reason).model_dump(
        mode="json"
    )
    evaluation.finished_at = datetime.now(UTC)


def give_up_step(session: Session, step: Step, *, reason: str) -> None:
    """A step no worker answered: failed, with the reason."""
    lifecycle.fail_step(step)
    leases.expire(session, step_id=step.id)
    step.reason, step.finished_at = reason, datetime.now(UTC)


def record_usage(
    session: Session,
    *,
    usage: list[UsageRecord],
    run_id: str | None,
    agent_id: str | None = None,
    evaluation_id: str | None = None,
    step_id: str | None = None,
) -> None:
    for call in usage:
        session.add(
            LLMUsage(
                id=uuid.uuid4().hex,
                run_id=run_id,
                step_id=step_id,
                evaluation_id=evaluation_id,
                agent_id=agent_id,
                purpose=call.purpose,
                model=call.model,
                prompt_tokens=call.prompt_tokens,
                completion_tokens=call.completion_tokens,
                cost_usd=call.cost_usd,
                record=call.detail,
            )
        )


def reject_step(
    session: Session,
    *,
    step_id: str,
    reason: str,
    diagnosis: str | None = None,
    usage: list[UsageRecord] | None = None,
    worker: WorkerIdentity | None = None,
) -> Step:
    """A step that ended without a child (empty patch, improver crashed...), and the worker that
    said so (None: the service itself). Caller commits."""
    step = locked(session, Step, step_id)
    if step is None:
        raise NotFoundError(f"step {step_id} not found")
    if step.status in lifecycle.STEP_FINISHED:
        return step
    if step.child_id is not None:
        raise ConflictError(f"step {step_id} already has a child; reject the child instead")
    lifecycle.reject_step(step)
    step.reason = reason
    step.diagnosis = diagnosis or step.diagnosis
    record_usage(session, usage=usage or [], run_id=step.run_id, step_id=step.id, agent_id=step.parent_id)
    leases.settle(session, usage=usage or [], step_id=step.id)
    step.finished_at = datetime.now(UTC)
    if worker is not None:
        worker.sign(step)
    name = worker.name if worker is not None else None
    events.emit(session, StepRejected(step=step.number, reason=reason, worker=name), run_id=step.run_id)
    return step
