"""Which failure of a parent an improve job diagnoses, and the excerpts of it the job carries;
for a hyper step, the excerpts of the parent's evaluations its own `improve` command reads."""

from __future__ import annotations

import json
import random

from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from contracts.jobs import EvaluationRecord, FailedEvaluation
from contracts.records import EvaluationResult
from contracts.vocabulary import EvaluationPurpose
from service.db.models import Evaluation
from service.lifecycle import EvaluationStatus

# Each excerpt is cut to this many characters: a diff keeps its start, logs keep their end.
MAX_EXCERPT = 6_000
TRAJECTORY_MESSAGES = 12
MAX_MESSAGE = 800
PASSING = ("PASSED", "XFAIL")
# A hyper job carries at most this many records, with shorter excerpts, to stay a small message.
MAX_RECORDS = 30
RECORD_EXCERPT = 2_000


def failure_to_diagnose(
    session: Session, *, run_id: str, parent_id: str, step_id: str
) -> FailedEvaluation | None:
    """One unresolved, finished evaluation of the parent in this run, chosen reproducibly by
    step id (a job sent again diagnoses the same failure); None if it resolved everything."""
    failed = session.scalars(
        select(Evaluation)
        .where(
            Evaluation.run_id == run_id,
            Evaluation.agent_id == parent_id,
            Evaluation.status == EvaluationStatus.DONE,
            Evaluation.resolved.is_not(True),
            Evaluation.purpose == EvaluationPurpose.SELECTION,  # held-out tasks never feed the search
        )
        .order_by(Evaluation.task_id)
    ).all()
    if not failed:
        return None
    chosen = random.Random(step_id).choice(failed)
    return excerpt(chosen)


def parent_records(session: Session, *, run_id: str, parent_id: str) -> list[EvaluationRecord]:
    """The parent's finished selection evaluations in this run, unresolved first (then by task),
    at most MAX_RECORDS of them: held-out tasks must not shape a child either."""
    done = session.scalars(
        select(Evaluation)
        .where(
            Evaluation.run_id == run_id,
            Evaluation.agent_id == parent_id,
            Evaluation.status == EvaluationStatus.DONE,
            Evaluation.purpose == EvaluationPurpose.SELECTION,
        )
        .order_by(Evaluation.resolved.is_(True), Evaluation.task_id, Evaluation.id)
        .limit(MAX_RECORDS)
    ).all()
    return [
        EvaluationRecord(**excerpt(e, RECORD_EXCERPT).model_dump(), resolved=e.resolved is True) for e in done
    ]


def excerpt(evaluation: Evaluation, size: int = MAX_EXCERPT) -> FailedEvaluation:
    result = _result(evaluation)
    return FailedEvaluation(
        evaluation_id=evaluation.id,
        task_id=evaluation.task_id,
        grade_reason=result.grade_reason,
        agent_failure=result.failure,
        failing_tests=[test for test, status in result.fail_to_pass.items() if status not in PASSING],
        broken_tests=[test for test, status in result.pass_to_pass.items() if status not in PASSING],
        diff=result.diff[:size],
        trajectory_tail=_trajectory_tail(result.trajectory, size),
        agent_log_tail=_tail(result.agent_log, size),
    )


def _result(evaluation: Evaluation) -> EvaluationResult:
    try:
        return EvaluationResult.model_validate(evaluation.result or {"resolved": False})
    except ValidationError:
        # Rows written before results were stored whole: keep what explains the failure.
        stored = evaluation.result or {}
        failure = stored.get("failure")
        return EvaluationResult(resolved=False, failure=str(failure) if failure else "no result was recorded")


def _tail(text: str, size: int = MAX_EXCERPT) -> str:
    return text[-size:]


def _trajectory_tail(trajectory: object, size: int = MAX_EXCERPT) -> str:
    if not isinstance(trajectory, dict) or not isinstance(trajectory.get("messages"), list):
        return ""
    tail = trajectory["messages"][-TRAJECTORY_MESSAGES:]
    return _tail("\n".join(json.dumps(message, ensure_ascii=False)[:MAX_MESSAGE] for message in tail), size)
