"""Agents: list, show, diff against the parent, code, and the export formats."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import APIRouter, Query, Response
from fastapi.responses import PlainTextResponse, StreamingResponse

from service import queries
from service.api import model_views, views
from service.api.deps import ArchiveDep, Reader, SessionDep
from service.api.model_schemas import AgentTransfer
from service.api.responses import download, error_responses
from service.api.routes import CheckedRoute
from service.api.schemas import MAX_OFFSET, AgentDetail, AgentPublic, EvaluationDetail, Page
from service.archive.export import agent_metadata, export_agent

router = APIRouter(
    prefix="/api/agents",
    tags=["agents"],
    dependencies=[Reader],
    route_class=CheckedRoute,
    responses=error_responses(401, 422),
)


def _download(chunks: Iterator[bytes], media_type: str, filename: str) -> StreamingResponse:
    """Streamed as git writes it: an agent of any size is sent in bounded memory."""
    return StreamingResponse(
        chunks,
        media_type=media_type,
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


@router.get("")
def list_agents(
    session: SessionDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    kind: Annotated[str | None, Query(pattern="^(seed|child)$")] = None,
) -> Page[AgentPublic]:
    items, total = views.list_agents(session, limit=limit, offset=offset, kind=kind)
    return Page(items=items, total=total, limit=limit, offset=offset)


@router.get("/{agent_id}", responses=error_responses(404))
def show_agent(agent_id: str, session: SessionDep) -> AgentDetail:
    return views.agent_detail(session, agent_id=agent_id)


@router.get("/{agent_id}/diff", response_class=PlainTextResponse, responses=error_responses(404))
def agent_diff(agent_id: str, session: SessionDep, archive: ArchiveDep) -> str:
    """The agent's change against its parent (a seed's whole code against nothing)."""
    agent = queries.get_agent(session, agent_id=agent_id)
    return archive.git.diff(agent.parent_id, agent.id)


@router.get(
    "/{agent_id}/code",
    response_class=Response,
    responses={**download("application/gzip", "The code as tar.gz"), **error_responses(404)},
)
def agent_code(agent_id: str, session: SessionDep, archive: ArchiveDep) -> Response:
    queries.get_agent(session, agent_id=agent_id)
    chunks = archive.git.archive_stream(agent_id, fmt="tar.gz", prefix=f"agent-{agent_id[:12]}/")
    return _download(chunks, "application/gzip", f"agent-{agent_id[:12]}-code.tar.gz")


@router.get(
    "/{agent_id}/export",
    response_class=Response,
    responses={**download("application/gzip", "Code and metadata.json as tar.gz"), **error_responses(404)},
)
def agent_export(agent_id: str, session: SessionDep, archive: ArchiveDep) -> Response:
    """tar.gz of the code plus metadata.json (lineage, scores, run config, models)."""
    metadata = agent_metadata(session, agent_id=agent_id)
    return _download(export_agent(metadata, archive.git), "application/gzip", f"agent-{agent_id[:12]}.tar.gz")


@router.get(
    "/{agent_id}/bundle",
    response_class=Response,
    responses={**download("application/octet-stream", "A git bundle"), **error_responses(404)},
)
def agent_bundle(agent_id: str, session: SessionDep, archive: ArchiveDep) -> Response:
    """A git bundle of the agent's lineage: `git clone agent.bundle` gives its history."""
    queries.get_agent(session, agent_id=agent_id)
    chunks = archive.git.bundle_stream([agent_id])
    return _download(chunks, "application/octet-stream", f"agent-{agent_id[:12]}.bundle")


@router.get("/{agent_id}/patches", response_class=PlainTextResponse, responses=error_responses(404))
def agent_patches(agent_id: str, session: SessionDep, archive: ArchiveDep) -> StreamingResponse:
    """The patch series (git format-patch) from the agent's seed to the agent."""
    lineage = queries.lineage_ids(session, agent_id=queries.get_agent(session, agent_id=agent_id).id)
    chunks = archive.git.patch_series_stream(lineage[0], agent_id)
    return StreamingResponse(chunks, media_type="text/plain; charset=utf-8")


@router.get("/{agent_id}/transfer", responses=error_responses(404))
def agent_transfer(
    agent_id: str,
    session: SessionDep,
    model: Annotated[str | None, Query(min_length=1, max_length=200, description="One solving model")] = None,
) -> AgentTransfer:
    """The agent re-scored on other models: its evaluation-only runs, pooled per solving model
    (`clade agent transfer`), best rate first, with 95% Wilson intervals."""
    return model_views.agent_transfer(session, agent_id=agent_id, model=model)


@router.get("/{agent_id}/evaluations/{evaluation_id}", responses=error_responses(404))
def agent_evaluation(agent_id: str, evaluation_id: str, session: SessionDep) -> EvaluationDetail:
    return views.evaluation_detail(session, agent_id=agent_id, evaluation_id=evaluation_id)
