"""Worker endpoints: what a stateless worker fetches and hands back. A worker token is required
(the settings' own, or one the admin issued); every answer about a job shows that job's secret
(service.job_secrets) and is recorded with the worker that sent it."""

from __future__ import annotations

import logging
from typing import Annotated, TypeVar

from fastapi import APIRouter, Header, Response
from fastapi.responses import StreamingResponse
from pydantic import BaseModel
from sqlalchemy.orm import Session

from contracts.errors import NotFoundError
from contracts.jobs import JOB_SECRET_HEADER
from contracts.logs import log_ids
from contracts.records import ChildSubmission, EvaluationSubmission, StepFailure
from service import job_secrets, queries
from service.api.deps import ArchiveDep, SessionDep, WorkerDep, WorkerOnly
from service.api.responses import download, error_responses
from service.api.routes import CheckedRoute
from service.api.schemas import AgentPublic, EvaluationPublic
from service.db.locks import locked
from service.db.models import Evaluation, Step
from service.lifecycle import EvaluationStatus, StepStatus
from service.results import record_evaluation, reject_step

log = logging.getLogger("clade.service")
router = APIRouter(
    prefix="/api/worker",
    tags=["worker"],
    dependencies=[WorkerOnly],
    route_class=CheckedRoute,
    responses=error_responses(401, 404, 422),
)
Answered = TypeVar("Answered", Step, Evaluation)
JobSecret = Annotated[
    str | None, Header(alias=JOB_SECRET_HEADER, description="The secret the job's message carries")
]


class JobStatus(BaseModel):
    """Where a job stands: `open` while an answer is still wanted; a worker that finds it closed
    (answered already, cancelled with its run) acknowledges the message without running it."""

    id: str
    status: str
    open: bool
    reason: str | None = None
    worker_name: str | None = None  # who answered it, once answered


def _job(
    session: Session, model: type[Answered], item_id: str, secret: str | None, *, lock: bool = True
) -> Answered:
    """The step or evaluation, locked unless `lock` is False (a read: on SQLite the lock is the
    database's one write lock), once the request shows its job's secret (403/409 otherwise)."""
    item = locked(session, model, item_id) if lock else session.get(model, item_id)
    if item is None:
        raise NotFoundError(f"{'step' if model is Step else 'evaluation'} {item_id} not found")
    job_secrets.verify(item, secret)
    return item


@router.get(
    "/agents/{agent_id}/code",
    response_class=Response,
    responses=download("application/x-tar", "The code as an uncompressed tar"),
)
def agent_code(agent_id: str, session: SessionDep, archive: ArchiveDep) -> StreamingResponse:
    """The agent's code as an uncompressed tar (the worker unpacks it into a sandbox mount), streamed."""
    queries.get_agent(session, agent_id=agent_id)
    return StreamingResponse(archive.git.archive_stream(agent_id), media_type="application/x-tar")


@router.get(
    "/steps/{step_id}/merge",
    response_class=Response,
    responses=download("application/x-tar", "The merged code, conflict markers and all, as a tar"),
)
def step_merge(step_id: str, session: SessionDep, archive: ArchiveDep) -> Response:
    """A crossover step's merge of its two parents, with git's conflict markers where it conflicts:
    the code its improver resolves (the child's patch is then taken against the first parent)."""
    step = session.get(Step, step_id)
    if step is None or step.second_parent_id is None:
        raise NotFoundError(f"crossover step {step_id} not found")
    tar = archive.git.merged_tar(step.parent_id, step.second_parent_id)
    return Response(tar, media_type="application/x-tar")


@router.get("/steps/{step_id}/status", responses=error_responses(403, 409))
def step_status(step_id: str, session: SessionDep, secret: JobSecret = None) -> JobStatus:
    """Whether the step still wants a child: asked by a worker before it runs the job."""
    step = _job(session, Step, step_id, secret, lock=False)
    return JobStatus(
        id=step.id,
        status=step.status,
        open=step.status == StepStatus.PENDING,
        reason=step.reason,
        worker_name=step.worker_name,
    )


@router.get("/evaluations/{evaluation_id}/status", responses=error_responses(403, 409))
def evaluation_status(evaluation_id: str, session: SessionDep, secret: JobSecret = None) -> JobStatus:
    """Whether the evaluation still wants a result: asked by a worker before it runs the job."""
    evaluation = _job(session, Evaluation, evaluation_id, secret, lock=False)
    return JobStatus(
        id=evaluation.id,
        status=evaluation.status,
        open=evaluation.status == EvaluationStatus.PENDING,
        worker_name=evaluation.worker_name,
    )


@router.post("/steps/{step_id}/child", responses=error_responses(403, 409, 413, 507))
def submit_child(
    step_id: str,
    body: ChildSubmission,
    worker: WorkerDep,
    session: SessionDep,
    archive: ArchiveDep,
    secret: JobSecret = None,
) -> AgentPublic:
    """Create the step's child from a unified diff against its parent; idempotent by step id."""
    with log_ids(step_id=step_id):
        _job(session, Step, step_id, secret, lock=False)
        session.rollback()  # the archive takes the step's lock itself, in its own transaction
        agent = archive.create_child(
            step_id=step_id,
            patch=body.patch,
            diagnosis=body.diagnosis,
            rejection=body.rejection,
            usage=body.usage,
            worker=worker,
            still_sent=lambda step: job_secrets.verify(step, secret),
        )
        log.info("step %s: child %s from worker %s", step_id, agent.id[:12], worker.name)
    return AgentPublic.model_validate(agent, from_attributes=True)


@router.post("/steps/{step_id}/reject", responses=error_responses(403, 409, 413, 507))
def submit_step_rejection(
    step_id: str, body: StepFailure, worker: WorkerDep, session: SessionDep, secret: JobSecret = None
) -> JobStatus:
    """Record that the step ended without a child, with the reason; idempotent by step id."""
    with log_ids(step_id=step_id):
        _job(session, Step, step_id, secret)
        step = reject_step(
            session,
            step_id=step_id,
            reason=body.reason,
            diagnosis=body.diagnosis,
            usage=body.usage,
            worker=worker,
        )
        session.commit()
        log.info("step %s: no child (%s) from worker %s", step_id, body.reason[:200], worker.name)
    return JobStatus(
        id=step.id,
        status=step.status,
        open=False,
        reason=step.reason,
        worker_name=step.worker_name,
    )


@router.post("/evaluations/{evaluation_id}/result", responses=error_responses(403, 409, 413, 507))
def submit_result(
    evaluation_id: str,
    body: EvaluationSubmission,
    worker: WorkerDep,
    session: SessionDep,
    secret: JobSecret = None,
) -> EvaluationPublic:
    with log_ids(evaluation_id=evaluation_id):
        _job(session, Evaluation, evaluation_id, secret)
        evaluation = record_evaluation(session, evaluation_id=evaluation_id, submission=body, worker=worker)
        session.commit()
        log.info("evaluation %s: resolved=%s from worker %s", evaluation_id, evaluation.resolved, worker.name)
    return EvaluationPublic.model_validate(evaluation, from_attributes=True)
