"""`/docs`: Swagger UI from the pinned `swagger-ui-bundle-v2` package (module `swagger_ui_bundle`),
served by the service itself.

No script comes from a CDN (a floating version, without integrity, would run on the origin whose
localStorage holds the admin token). ReDoc ships no such package and is not served; the OpenAPI
document stays at `/openapi.json`.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from fastapi import APIRouter, HTTPException, status
from fastapi.responses import FileResponse, HTMLResponse
from swagger_ui_bundle import swagger_ui_path

# The files the page loads; nothing else of the package's folder is served.
ASSETS = {"swagger-ui.css", "swagger-ui-bundle.js", "favicon-32x32.png"}
INIT_SCRIPT = Path(str(resources.files("service.api") / "swagger-init.js"))

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Clade API</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
</head><body><div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/swagger-init.js"></script>
</body></html>
"""

router = APIRouter(include_in_schema=False)


@router.get("/docs")
def docs_page() -> HTMLResponse:
    return HTMLResponse(PAGE)


@router.get("/docs/assets/{name}")
def docs_asset(name: str) -> FileResponse:
    if name == INIT_SCRIPT.name:
        return FileResponse(INIT_SCRIPT, media_type="text/javascript")
    if name not in ASSETS:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"{name} not found")
    # The package's version is in its folder's name: a new version is a new URL.
    return FileResponse(Path(str(swagger_ui_path)) / name, headers={"Cache-Control": "public, max-age=86400"})
