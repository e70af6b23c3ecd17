"""The lineage dashboard: its built pages (`web/dist`) and the few reads only it needs.

Pages are served for every path outside `/api/`, so the single-page app's own URLs
(`/runs/<id>`, `/agents/<id>`, `/compare`) load on a reload or from a bookmark, and API
routes keep priority whatever order the routers are included in.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import yaml
from fastapi import APIRouter, HTTPException, Query, status
from fastapi.responses import FileResponse, HTMLResponse, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, Field
from sqlalchemy import func, select
from starlette.routing import Match
from starlette.types import Scope

from service import queries
from service.api.deps import Reader, SessionDep
from service.api.schemas import Lineage
from service.db.models import Event, LLMUsage

DEFAULT_DIST = Path(__file__).resolve().parents[3] / "web" / "dist"
MAX_CONFIG_CHARS = 200_000


class UsagePoint(BaseModel):
    """Totals of the run's metered LLM calls up to and including `at`."""

    at: datetime
    usd: float
    tokens: int
    calls: int


class PurposeUsage(BaseModel):
    purpose: str
    usd: float
    tokens: int
    calls: int


class RunUsage(BaseModel):
    run_id: str
    points: list[UsagePoint]
    by_purpose: list[PurposeUsage]


class LiveLineage(Lineage):
    """The lineage and the newest event id read before it: poll events after `cursor`."""

    cursor: int  # 0 when the run has no events yet


class ConfigText(BaseModel):
    text: str = Field(max_length=MAX_CONFIG_CHARS)


class ParsedConfig(BaseModel):
    config: dict[str, Any]


api = APIRouter(prefix="/api", tags=["dashboard"], dependencies=[Reader])


@api.get("/runs/{run_id}/usage")
def run_usage(
    run_id: str, session: SessionDep, points: Annotated[int, Query(ge=2, le=2000)] = 200
) -> RunUsage:
    """Cumulative cost and tokens over time (at most `points` points), and totals per purpose."""
    queries.get_run(session, run_id=run_id)
    rows = session.execute(
        select(
            LLMUsage.created_at,
            LLMUsage.purpose,
            LLMUsage.cost_usd,
            LLMUsage.prompt_tokens + LLMUsage.completion_tokens,
        )
        .where(LLMUsage.run_id == run_id)
        .order_by(LLMUsage.created_at, LLMUsage.id)
    ).all()
    series: list[UsagePoint] = []
    purposes: dict[str, PurposeUsage] = {}
    usd, tokens = 0.0, 0
    stride = max(1, -(-len(rows) // points))  # ceil: keep at most `points` points
    for index, (at, purpose, cost, used) in enumerate(rows):
        usd += cost
        tokens += used
        total = purposes.setdefault(purpose, PurposeUsage(purpose=purpose, usd=0.0, tokens=0, calls=0))
        total.usd += cost
        total.tokens += used
        total.calls += 1
        if (index + 1) % stride == 0 or index == len(rows) - 1:
            # SQLite hands back times without their zone; they were written in UTC.
            when = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
            series.append(UsagePoint(at=when, usd=usd, tokens=tokens, calls=index + 1))
    by_purpose = sorted(purposes.values(), key=lambda p: p.usd, reverse=True)
    return RunUsage(run_id=run_id, points=series, by_purpose=by_purpose)


@api.get("/runs/{run_id}/lineage/live", response_model=None, responses={200: {"model": LiveLineage}})
def live_lineage(run_id: str, session: SessionDep) -> Response:
    """What a live view starts from, in one request: the cursor first, then the tree.

    An event written between the two reads is delivered again by the next poll (a harmless
    refresh); none can fall between them unseen. Plain JSON, as `/lineage` does, for speed.
    """
    queries.get_run(session, run_id=run_id)
    cursor = session.scalar(select(func.max(Event.id)).where(Event.run_id == run_id)) or 0
    body = {**queries.lineage(session, run_id=run_id), "cursor": cursor}
    return Response(json.dumps(body, separators=(",", ":")), media_type="application/json")


@api.post("/dashboard/parse-config")
def parse_config(body: ConfigText) -> ParsedConfig:
    """A run configuration typed as YAML or JSON, as the JSON object `POST /api/runs` takes."""
    try:
        data = yaml.safe_load(body.text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise _text_error(f"not valid YAML or JSON: {where}{problem}") from exc
    if not isinstance(data, dict):
        raise _text_error("a run configuration must be a mapping (key: value) at the top level")
    # Round-trip through JSON so that YAML-only values (dates, sets) are refused here, not later.
    try:
        config = json.loads(json.dumps(data))
    except (TypeError, ValueError) as exc:
        raise _text_error(f"the configuration holds a value JSON cannot carry: {exc}") from exc
    return ParsedConfig(config=config)


def _text_error(message: str) -> HTTPException:
    detail = [{"loc": ["body", "text"], "msg": message, "type": "value_error"}]
    return HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, detail=detail)


class PageRoute(APIRoute):
    """Matches page paths only: anything under `/api` is left to the API and its 404s."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        path: str = scope.get("path", "")
        if path == "/api" or path.startswith("/api/"):
            return Match.NONE, {}
        return super().matches(scope)


NOT_BUILT = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Clade dashboard not built</title></head>
<body style="font-family: sans-serif; max-width: 40rem; margin: 3rem auto; line-height: 1.5">
<h1>The Clade dashboard is not built</h1>
<p>The service looks for the dashboard's pages in <code>{dist}</code>, and that folder is missing.</p>
<p>Build it once (needs Node.js 20 and npm), then reload this page:</p>
<pre>bash web/build.sh</pre>
<p>The REST API works without it: see <a href="/docs">/docs</a>.</p>
</body></html>
"""


def make_pages(dist: Path) -> APIRouter:
    """Serve the built app: a file of `dist` when the path names one, else `index.html`."""
    pages = APIRouter(route_class=PageRoute, include_in_schema=False)
    root = dist.resolve()

    @pages.get("/{path:path}")
    def page(path: str) -> Response:
        index = root / "index.html"
        if not index.is_file():
            return HTMLResponse(NOT_BUILT.format(dist=root), status_code=status.HTTP_503_SERVICE_UNAVAILABLE)
        if path:
            candidate = (root / path).resolve()
            if candidate.is_relative_to(root) and candidate.is_file():
                # Vite names assets by content hash, so they never change under one name.
                immutable = candidate.parent.name == "assets"
                cache = "public, max-age=31536000, immutable" if immutable else "no-cache"
                return FileResponse(candidate, headers={"Cache-Control": cache})
            if Path(path).suffix:  # a missing file, not a page of the app
                raise HTTPException(status.HTTP_404_NOT_FOUND, f"{path} not found")
        return FileResponse(index, headers={"Cache-Control": "no-cache"})

    return pages


def make_router(dist: Path = DEFAULT_DIST) -> APIRouter:
    combined = APIRouter()
    combined.include_router(api)
    combined.include_router(make_pages(dist))
    return combined


router = make_router()
