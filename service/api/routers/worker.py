"""Worker endpoints: what a stateless worker fetches and hands back. Worker token required."""

from __future__ import annotations

import logging

from fastapi import APIRouter, Response
from fastapi.responses import StreamingResponse

from contracts.errors import NotFoundError
from contracts.logs import log_ids
from contracts.records import ChildSubmission, EvaluationSubmission, StepFailure
from service import queries
from service.api.deps import ArchiveDep, SessionDep, WorkerOnly
from service.api.responses import download, error_responses
from service.api.routes import CheckedRoute
from service.api.schemas import AgentPublic, EvaluationPublic
from service.db.models import Step
from service.results import record_evaluation, reject_step

log = logging.getLogger("clade.service")
router = APIRouter(
    prefix="/api/worker",
    tags=["worker"],
    dependencies=[WorkerOnly],
    route_class=CheckedRoute,
    responses=error_responses(401, 404, 422),
)


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


@router.post("/steps/{step_id}/child", responses=error_responses(409, 413, 507))
def submit_child(step_id: str, body: ChildSubmission, archive: ArchiveDep) -> AgentPublic:
    """Create the step's child from a unified diff against its parent; idempotent by step id."""
    with log_ids(step_id=step_id):
        agent = archive.create_child(
            step_id=step_id,
            patch=body.patch,
            diagnosis=body.diagnosis,
            rejection=body.rejection,
            usage=body.usage,
        )
        log.info("step %s: child %s", step_id, agent.id[:12])
    return AgentPublic.model_validate(agent, from_attributes=True)


@router.post("/steps/{step_id}/reject", responses=error_responses(409, 413, 507))
def submit_step_rejection(step_id: str, body: StepFailure, session: SessionDep) -> dict[str, str]:
    with log_ids(step_id=step_id):
        step = reject_step(
            session, step_id=step_id, reason=body.reason, diagnosis=body.diagnosis, usage=body.usage
        )
        session.commit()
        log.info("step %s: no child (%s)", step_id, body.reason[:200])
    return {"step_id": step.id, "status": step.status}


@router.post("/evaluations/{evaluation_id}/result", responses=error_responses(413, 507))
def submit_result(evaluation_id: str, body: EvaluationSubmission, session: SessionDep) -> EvaluationPublic:
    with log_ids(evaluation_id=evaluation_id):
        evaluation = record_evaluation(session, evaluation_id=evaluation_id, submission=body)
        session.commit()
        log.info("evaluation %s: resolved=%s", evaluation_id, evaluation.resolved)
    return EvaluationPublic.model_validate(evaluation, from_attributes=True)
