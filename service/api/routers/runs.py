"""Runs: create, list, show, pause/resume/cancel, their agents, lineage, usage, events and export."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Response, status
from fastapi.responses import PlainTextResponse, StreamingResponse
from sqlalchemy.orm import Session

from contracts.config import RunConfig
from contracts.errors import NotFoundError
from contracts.events import RunEvent
from service import events, experience, lifecycle, queries, runs
from service.api import model_views, views
from service.api.deps import AdminOnly, ArchiveDep, IsAdminDep, Reader, Services, ServicesDep, SessionDep
from service.api.model_schemas import StepPublic
from service.api.redact import event_for
from service.api.responses import download, error_responses
from service.api.routes import CheckedRoute
from service.api.schemas import (
    MAX_OFFSET,
    Lineage,
    LiveLineage,
    Page,
    RunAgentPublic,
    RunDetail,
    RunPublic,
    RunUsage,
)
from service.archive.export import (
    agent_metadata,
    export_top,
    file_member,
    predictions_jsonl,
    pro_predictions_json,
)
from service.driver.estimate import PlannedRun, check_evaluation_room, planned_run
from service.experience import ExperiencePool
from service.lifecycle import MemberStatus
from service.plan import RunPlan, plan_run

router = APIRouter(
    prefix="/api/runs", tags=["runs"], route_class=CheckedRoute, responses=error_responses(401, 422)
)


class JSONLinesResponse(PlainTextResponse):
    """One JSON document a line (its type documented as such in the OpenAPI document)."""

    media_type = "application/jsonl"


# Both bodies `run_predictions` can send: JSON lines by default, a JSON list for SWE-bench Pro.
PREDICTIONS_RESPONSE: dict[int | str, dict[str, Any]] = {
    status.HTTP_200_OK: {
        "description": "The predictions file",
        "content": {
            "application/jsonl": {"schema": {"type": "string"}},
            "application/json": {
                "schema": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["instance_id", "patch", "prefix"],
                        "properties": {
                            name: {"type": "string"} for name in ("instance_id", "patch", "prefix")
                        },
                    },
                }
            },
        },
    }
}

Limit = Annotated[int, Query(ge=1, le=1000)]
Offset = Annotated[int, Query(ge=0, le=MAX_OFFSET)]


@router.post(
    "", status_code=status.HTTP_201_CREATED, dependencies=[AdminOnly], responses=error_responses(413, 507)
)
def create_run(config: RunConfig, session: SessionDep, services: ServicesDep) -> RunDetail:
    plan = _plan(config, services)
    run = runs.create_run(session, plan=plan)
    session.commit()
    return views.run_detail(session, run=run)


@router.post("/plan", dependencies=[AdminOnly], responses=error_responses(413))
def preview_run(config: RunConfig, session: SessionDep, services: ServicesDep) -> PlannedRun:
    """What `POST /api/runs` would start, with a cost and time estimate; nothing is stored.
    The same configuration is refused here as there, with the same 422."""
    plan = _plan(config, services)
    runs.require_agents(session, config=plan.config)
    return planned_run(session, plan)


def _plan(config: RunConfig, services: Services) -> RunPlan:
    """The run's plan, or ConfigFieldError; a run whose evaluation budget holds no child is refused
    here (the simulator sets its budgets itself)."""
    plan = plan_run(
        config,
        catalog=services.catalog,
        visibility_timeout_s=services.settings.broker_visibility_timeout_s,
        prices=services.prices,
    )
    check_evaluation_room(plan)
    return plan


@router.get("", dependencies=[Reader])
def list_runs(session: SessionDep, limit: Limit = 50, offset: Offset = 0) -> Page[RunPublic]:
    items, total = views.list_runs(session, limit=limit, offset=offset)
    return Page(items=items, total=total, limit=limit, offset=offset)


@router.get("/{run_id}", dependencies=[Reader], responses=error_responses(404))
def show_run(run_id: str, session: SessionDep) -> RunDetail:
    return views.run_detail(session, run=queries.get_run(session, run_id=run_id))


def _state_change(action: str) -> Callable[[str, Session], RunDetail]:
    def change(run_id: str, session: SessionDep) -> RunDetail:
        run = runs.change_state(session, run_id=run_id, action=action)
        session.commit()
        return views.run_detail(session, run=run)

    change.__name__ = f"{action}_run"
    return change


for _action in lifecycle.RUN_ACTIONS:
    router.post(
        f"/{{run_id}}/{_action}",
        dependencies=[AdminOnly],
        summary=f"{_action.title()} a run",
        responses=error_responses(404, 409, 507),
    )(_state_change(_action))


@router.get("/{run_id}/agents", dependencies=[Reader], responses=error_responses(404))
def run_agents(
    run_id: str,
    session: SessionDep,
    limit: Limit = 100,
    offset: Offset = 0,
    status_filter: Annotated[MemberStatus | None, Query(alias="status")] = None,
) -> Page[RunAgentPublic]:
    items, total = views.run_agents(session, run_id=run_id, limit=limit, offset=offset, status=status_filter)
    return Page(items=items, total=total, limit=limit, offset=offset)


@router.get("/{run_id}/steps", dependencies=[Reader], responses=error_responses(404))
def run_steps(run_id: str, session: SessionDep, limit: Limit = 100, offset: Offset = 0) -> Page[StepPublic]:
    """The run's steps in order: each one's improve model (which, and why) and its calls per model."""
    items, total = model_views.run_steps(session, run_id=run_id, limit=limit, offset=offset)
    return Page(items=items, total=total, limit=limit, offset=offset)


@router.get(
    "/{run_id}/lineage",
    dependencies=[Reader],
    response_model=None,
    responses={200: {"model": Lineage}, **error_responses(404)},
)
def run_lineage(run_id: str, session: SessionDep) -> Response:
    """The whole tree of a run (no pagination: a tree needs all its nodes)."""
    return Response(views.lineage_json(session, run_id=run_id), media_type="application/json")


@router.get("/{run_id}/usage", dependencies=[Reader], responses=error_responses(404))
def run_usage(
    run_id: str, session: SessionDep, points: Annotated[int, Query(ge=2, le=2000)] = 200
) -> RunUsage:
    """Cumulative cost and tokens over time (at most `points` points), and totals per purpose."""
    return views.run_usage(session, run_id=run_id, points=points)


@router.get(
    "/{run_id}/lineage/live",
    dependencies=[Reader],
    response_model=None,
    responses={200: {"model": LiveLineage}, **error_responses(404)},
)
def live_lineage(run_id: str, session: SessionDep) -> Response:
    """What a live view starts from, in one request: the cursor first, then the tree.

    An event written between the two reads is delivered again by the next poll (a harmless
    refresh); none can fall between them unseen. Plain JSON, as `/lineage` does, for speed.
    """
    return Response(views.live_lineage_json(session, run_id=run_id), media_type="application/json")


@router.get("/{run_id}/events", dependencies=[Reader], responses=error_responses(404))
def run_events(
    run_id: str,
    session: SessionDep,
    admin: IsAdminDep,
    after: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    limit: Limit = 200,
) -> list[RunEvent]:
    """Events after the given id, oldest first: poll with the last id you saw. A `driver_error`'s
    text is shown with the admin token only; a stored event that no longer fits its kind's model
    is answered as an `unreadable` event holding what was stored (see docs/events.md)."""
    rows = views.events_after(session, run_id=run_id, after=after, limit=limit)
    return [event_for(events.read(e), admin=admin) for e in rows]


@router.get(
    "/{run_id}/export",
    dependencies=[Reader],
    response_class=Response,
    responses={**download("application/gzip", "The top agents as one tar.gz"), **error_responses(404)},
)
def export_run_top(
    run_id: str,
    session: SessionDep,
    archive: ArchiveDep,
    k: Annotated[int, Query(ge=1, le=100)] = 5,
) -> Response:
    """The run's top k admitted agents as one tar.gz (code and metadata.json each), and
    `experience.json`, every version of the experience pool, when the run has one."""
    queries.get_run(session, run_id=run_id)
    ids = queries.top_agents(session, run_id=run_id, k=k)
    metadata = [agent_metadata(session, agent_id=agent_id) for agent_id in ids]
    pools = experience.versions(session, run_id=run_id)
    extra = [file_member(f"run-{run_id[:12]}/experience.json", experience.dump(pools))] if pools else []
    return StreamingResponse(
        export_top(metadata, archive.git, extra),
        media_type="application/gzip",
        headers={"Content-Disposition": f'attachment; filename="run-{run_id[:12]}-top{k}.tar.gz"'},
    )


@router.get("/{run_id}/experience", dependencies=[Reader], responses=error_responses(404))
def run_experience(
    run_id: str,
    session: SessionDep,
    version: Annotated[int | None, Query(ge=1, le=2**31 - 1, description="default: the latest")] = None,
) -> ExperiencePool:
    """A version of the run's experience pool (group evolution): what its steps tried and how
    their scores changed, as the improve jobs received it."""
    queries.get_run(session, run_id=run_id)
    pools = experience.versions(session, run_id=run_id)
    if not pools:
        raise NotFoundError(f"run {run_id} has no experience pool (not a group run, or no step finished yet)")
    if version is None:
        return pools[-1]
    if version > len(pools):
        raise NotFoundError(f"run {run_id}'s experience pool has {len(pools)} versions, not {version}")
    return pools[version - 1]


@router.get(
    "/{run_id}/predictions",
    dependencies=[Reader],
    response_class=JSONLinesResponse,
    responses={**PREDICTIONS_RESPONSE, **error_responses(404)},
)
def run_predictions(
    run_id: str,
    session: SessionDep,
    agent: Annotated[str | None, Query(pattern="^[0-9a-f]{40}$")] = None,
    fmt: Annotated[Literal["swebench", "swebench-pro"], Query(alias="format")] = "swebench",
) -> Response:
    """SWE-bench predictions JSONL of one agent's evaluations in this run (default: the best agent);
    `format=swebench-pro`: SWE-bench Pro's patches file (a JSON list of instance_id, patch, prefix)."""
    run = queries.get_run(session, run_id=run_id)
    if agent is not None:
        # An empty file would read as "no task solved", not "no such agent here".
        views.require_in_run(session, run_id=run_id, agent_id=agent)
    agent_id = agent or next(iter(queries.top_agents(session, run_id=run_id, k=1)), run.seed_agent_id)
    if fmt == "swebench-pro":
        return Response(
            pro_predictions_json(session, run_id=run_id, agent_id=agent_id),
            media_type="application/json",
            headers={"Content-Disposition": f'attachment; filename="patches-{agent_id[:12]}.json"'},
        )
    body = predictions_jsonl(session, run_id=run_id, agent_id=agent_id)
    return JSONLinesResponse(
        body,
        headers={"Content-Disposition": f'attachment; filename="predictions-{agent_id[:12]}.jsonl"'},
    )
