"""The lineage dashboard: its built pages (`web/dist`) and the one call only it needs.

Pages are served for every path outside `/api/`, so the single-page app's own URLs
(`/runs/<id>`, `/agents/<id>`, `/compare`) load on a reload or from a bookmark, and API
routes keep priority whatever order the routers are included in.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import APIRouter, HTTPException, status
from fastapi.responses import FileResponse, HTMLResponse, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, Field
from starlette.routing import Match
from starlette.types import Scope

from contracts.safe_yaml import YamlInputError, load_yaml
from service.api.deps import AdminOnly
from service.api.responses import error_responses
from service.api.routes import CheckedRoute


def default_dist() -> Path:
    """The built pages: inside the installed `service.api` package (a wheel carries them, see
    setup.py), else the checkout's `web/dist/`."""
    packaged = resources.files("service.api") / "web"
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(str(resources.files("service"))).parent / "web" / "dist"


DEFAULT_DIST = default_dist()
MAX_CONFIG_CHARS = 200_000


class ConfigText(BaseModel):
    text: str = Field(max_length=MAX_CONFIG_CHARS)


class ParsedConfig(BaseModel):
    config: dict[str, Any]


# Admin only: parsing is work done for whoever asks, and only the new-run form (which needs the
# admin token to start the run anyway) asks.
api = APIRouter(
    prefix="/api",
    tags=["dashboard"],
    dependencies=[AdminOnly],
    route_class=CheckedRoute,
    responses=error_responses(401, 413, 422),
)


@api.post("/dashboard/parse-config")
def parse_config(body: ConfigText) -> ParsedConfig:
    """A run configuration typed as YAML or JSON, as the JSON object `POST /api/runs` takes.
    Anchors and aliases are refused, and so is nesting deeper than a JSON body may be."""
    try:
        data = load_yaml(body.text, max_chars=MAX_CONFIG_CHARS)
    except YamlInputError as exc:
        raise _text_error(str(exc)) from exc
    if not isinstance(data, dict):
        raise _text_error("a run configuration must be a mapping (key: value) at the top level")
    # Round-trip through JSON so that YAML-only values (dates, sets) are refused here, not later.
    try:
        config = json.loads(json.dumps(data, allow_nan=False))
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
        if "\x00" in path:  # no file is named so, and the operating system refuses the name
            raise HTTPException(status.HTTP_404_NOT_FOUND, "not found")
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
