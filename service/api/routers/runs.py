"""Runs: create, list, show, pause/resume/cancel, their agents, lineage, events and export."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response, status
from fastapi.responses import PlainTextResponse
from sqlalchemy import select
from sqlalchemy.orm import Session

from contracts.config import RunConfig
from service import queries, runs
from service.api.deps import AdminOnly, ArchiveDep, Reader, ServicesDep, SessionDep
from service.api.schemas import Lineage, Page, RunAgentPublic, RunDetail, RunPublic
from service.archive.export import export_top, predictions_jsonl
from service.db.models import Event
from service.driver.plan import plan_run

router = APIRouter(prefix="/api/runs", tags=["runs"])
Limit = Annotated[int, Query(ge=1, le=1000)]
Offset = Annotated[int, Query(ge=0)]


@router.post("", status_code=status.HTTP_201_CREATED, dependencies=[AdminOnly])
def create_run(config: RunConfig, session: SessionDep, services: ServicesDep) -> RunDetail:
    plan = plan_run(
        config, catalog=services.catalog, visibility_timeout_s=services.settings.broker_visibility_timeout_s
    )
    run = runs.create_run(session, config=plan.config, stage_tasks=plan.stage_tasks)
    session.commit()
    return queries.run_detail(session, run=run)


@router.get("", dependencies=[Reader])
def list_runs(session: SessionDep, limit: Limit = 50, offset: Offset = 0) -> Page[RunPublic]:
    items, total = queries.list_runs(session, limit=limit, offset=offset)
    return Page(items=items, total=total, limit=limit, offset=offset)


@router.get("/{run_id}", dependencies=[Reader])
def show_run(run_id: str, session: SessionDep) -> RunDetail:
    return queries.run_detail(session, run=queries.get_run(session, run_id=run_id))


def _state_change(action: str) -> Callable[[str, Session], RunDetail]:
    def change(run_id: str, session: SessionDep) -> RunDetail:
        run = runs.change_state(session, run_id=run_id, action=action)
        session.commit()
        return queries.run_detail(session, run=run)

    change.__name__ = f"{action}_run"
    return change


for _action in runs.TRANSITIONS:
    router.post(f"/{{run_id}}/{_action}", dependencies=[AdminOnly], summary=f"{_action.title()} a run")(
        _state_change(_action)
    )


@router.get("/{run_id}/agents", dependencies=[Reader])
def run_agents(
    run_id: str,
    session: SessionDep,
    limit: Limit = 100,
    offset: Offset = 0,
    status_filter: Annotated[str | None, Query(alias="status")] = None,
) -> Page[RunAgentPublic]:
    items, total = queries.run_agents(
        session, run_id=run_id, limit=limit, offset=offset, status=status_filter
    )
    return Page(items=items, total=total, limit=limit, offset=offset)


@router.get(
    "/{run_id}/lineage", dependencies=[Reader], response_model=None, responses={200: {"model": Lineage}}
)
def run_lineage(run_id: str, session: SessionDep) -> Response:
    """The whole tree of a run (no pagination: a tree needs all its nodes)."""
    body = json.dumps(queries.lineage(session, run_id=run_id), separators=(",", ":"))
    return Response(body, media_type="application/json")


@router.get("/{run_id}/events", dependencies=[Reader])
def run_events(
    run_id: str, session: SessionDep, after: Annotated[int, Query(ge=0)] = 0, limit: Limit = 200
) -> list[dict[str, Any]]:
    """Events after the given id, oldest first: poll with the last id you saw."""
    queries.get_run(session, run_id=run_id)
    rows = session.scalars(
        select(Event).where(Event.run_id == run_id, Event.id > after).order_by(Event.id).limit(limit)
    )
    return [
        {"id": e.id, "kind": e.kind, "payload": e.payload, "created_at": e.created_at.isoformat()}
        for e in rows
    ]


@router.get("/{run_id}/export", dependencies=[Reader], response_class=Response)
def export_run_top(
    run_id: str,
    session: SessionDep,
    archive: ArchiveDep,
    k: Annotated[int, Query(ge=1, le=100)] = 5,
) -> Response:
    """The run's top k admitted agents as one tar.gz (code and metadata.json each)."""
    queries.get_run(session, run_id=run_id)
    ids = queries.top_agents(session, run_id=run_id, k=k)
    data = export_top(session, archive.git, agent_ids=ids)
    return Response(
        data,
        media_type="application/gzip",
        headers={"Content-Disposition": f'attachment; filename="run-{run_id[:12]}-top{k}.tar.gz"'},
    )


@router.get("/{run_id}/predictions", dependencies=[Reader], response_class=PlainTextResponse)
def run_predictions(
    run_id: str, session: SessionDep, agent: Annotated[str | None, Query(pattern="^[0-9a-f]{40}$")] = None
) -> PlainTextResponse:
    """SWE-bench predictions JSONL of one agent's evaluations in this run (default: the best agent)."""
    run = queries.get_run(session, run_id=run_id)
    agent_id = agent or next(iter(queries.top_agents(session, run_id=run_id, k=1)), run.seed_agent_id)
    body = predictions_jsonl(session, run_id=run_id, agent_id=agent_id)
    return PlainTextResponse(
        body,
        media_type="application/jsonl",
        headers={"Content-Disposition": f'attachment; filename="predictions-{agent_id[:12]}.jsonl"'},
    )
