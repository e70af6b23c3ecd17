"""The FastAPI application: built from settings, migrates and checks the archive on start."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request, Response, status
from fastapi.responses import JSONResponse

from benchmarks.catalog import BenchmarkCatalog
from contracts.settings import Settings
from service.api import errors
from service.api.deps import AdminOnly, Services
from service.api.responses import add_links, error_responses, errors_in_json
from service.api.routers import agents, benchmarks, dashboard, runs, seeds, worker
from service.api.schemas import ConsistencyPublic
from service.archive import consistency
from service.archive.git_store import GitStore
from service.archive.store import Archive
from service.db.engine import make_engine, make_session_factory
from service.db.migrate import upgrade
from service.driver.dispatch import CeleryDispatcher
from service.driver.loop import RunDriver

log = logging.getLogger("clade.service")


def build_services(settings: Settings) -> Services:
    """Migrate the database, open the archive and repair any disagreement between them."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    url = settings.resolved_database_url
    upgrade(url)
    engine = make_engine(url)
    sessions = make_session_factory(engine)
    git = GitStore(settings.archive_path)
    report = consistency.check(git, sessions, repair=True)
    if report.refs_restored or report.refs_removed:
        log.warning(
            "archive repaired: %d refs restored, %d stray refs removed",
            len(report.refs_restored),
            len(report.refs_removed),
        )
    for sha in report.missing_commits:
        log.error("agent %s is in the database but its commit is missing from git", sha)
    archive = Archive(git=git, sessions=sessions, max_patch_bytes=settings.max_patch_bytes)
    return Services(
        settings=settings, engine=engine, sessions=sessions, archive=archive, catalog=BenchmarkCatalog()
    )


def make_driver(settings: Settings, services: Services) -> RunDriver:
    from contracts.celery_app import make_celery

    dispatcher = CeleryDispatcher(make_celery(settings))
    return RunDriver(sessions=services.sessions, dispatcher=dispatcher, interval_s=settings.driver_interval_s)


def create_app(settings: Settings) -> FastAPI:
    services = build_services(settings)

    driver = make_driver(settings, services) if settings.run_driver_enabled else None

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if driver is not None:
            driver.start()
        yield
        if driver is not None:
            driver.stop()
        services.engine.dispose()

    app = FastAPI(
        title="Clade",
        version="0.1.0",
        description="An evolutionary archive of self-improving coding agents.",
        lifespan=lifespan,
    )
    app.state.services = services
    errors.install(app)
    document = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = add_links(errors_in_json(document()))
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]

    @app.middleware("http")
    async def limit_body(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        # Refuse oversized bodies before reading them; routes check exact sizes themselves.
        length = request.headers.get("content-length")
        limit = settings.max_upload_bytes
        if length is not None and length.isdigit() and int(length) > limit:
            return JSONResponse(
                status_code=status.HTTP_413_CONTENT_TOO_LARGE,
                content={"detail": f"request body of {length} bytes exceeds {limit}"},
            )
        return await call_next(request)

    for router in (runs.router, agents.router, seeds.router, worker.router, benchmarks.router):
        app.include_router(router)
    app.include_router(dashboard.router)  # pages for every path outside /api/

    @app.get("/api/health", tags=["system"])
    def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get(
        "/api/admin/consistency", tags=["system"], dependencies=[AdminOnly], responses=error_responses(401)
    )
    def check_consistency() -> ConsistencyPublic:
        report = consistency.check(services.archive.git, services.sessions, repair=False)
        return ConsistencyPublic.model_validate(report.model_dump())

    return app
