"""The FastAPI application: built from settings, migrates and checks the archive on start."""

from __future__ import annotations

import dataclasses
import logging
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from fastapi import FastAPI, status
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import Engine

from benchmarks.catalog import BenchmarkCatalog
from contracts.prices import load_price_table
from contracts.settings import Settings
from service.api import api_docs, errors
from service.api.body_limit import BodyLimitMiddleware
from service.api.deps import AdminOnly, IsAdminDep, Reader, Services
from service.api.redact import HIDDEN_ERROR
from service.api.responses import add_links, error_responses, errors_in_json
from service.api.routers import agents, benchmarks, dashboard, runs, seeds, worker, worker_tokens
from service.api.schemas import ConsistencyPublic, DriverHealth, HealthPublic
from service.api.security_headers import SecurityHeadersMiddleware
from service.archive import consistency
from service.archive.git_store import GitStore
from service.archive.limits import AgentLimits
from service.archive.store import Archive
from service.db.engine import make_engine, make_session_factory
from service.db.migrate import upgrade
from service.driver.dispatch import CeleryDispatcher
from service.driver.loop import RunDriver
from service.metrics import ServiceMetrics

log = logging.getLogger("clade.service")


def build_services(settings: Settings) -> Services:
    """Migrate the database, open the archive and repair any disagreement between them."""
    settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    empty_tmp(settings.tmp_dir)
    url = settings.resolved_database_url
    upgrade(url)
    engine = make_engine(url)
    sessions = make_session_factory(engine)
    git = GitStore(settings.archive_path, settings.tmp_dir)
    report = consistency.check(git, sessions, repair=True)
    if report.refs_restored or report.refs_removed:
        log.warning(
            "archive repaired: %d refs restored, %d stray refs removed",
            len(report.refs_restored),
            len(report.refs_removed),
        )
    for sha in report.missing_commits:
        log.error("agent %s is in the database but its commit is missing from git", sha)
    archive = Archive(
        git=git,
        sessions=sessions,
        max_patch_bytes=settings.max_patch_bytes,
        limits=AgentLimits.from_settings(settings),
    )
    return Services(
        settings=settings,
        engine=engine,
        sessions=sessions,
        archive=archive,
        # No download inside a request (`clade bench prepare` fetches ahead), no request waits long.
        catalog=BenchmarkCatalog(offline=True, wait_s=settings.benchmark_load_wait_s),
        prices=load_price_table(settings.price_table_path),
    )


def empty_tmp(folder: Path) -> None:
    """What a killed service left in its scratch space (unpacked seeds, indexes) is removed."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)


def make_driver(settings: Settings, services: Services, engine: Engine) -> RunDriver:
    """The driver works through `engine`, its own pool, never the API's."""
    from contracts.celery_app import make_celery

    dispatcher = CeleryDispatcher(make_celery(settings))
    return RunDriver(
        sessions=make_session_factory(engine),
        dispatcher=dispatcher,
        interval_s=settings.driver_interval_s,
        max_backoff_s=settings.driver_max_backoff_s,
        redispatch_margin_s=settings.driver_redispatch_margin_s,
        archive=services.archive,
    )


def _health(driver: RunDriver | None, stale_after_s: float, *, show_errors: bool) -> HealthPublic:
    if driver is None:
        off = DriverHealth(
            enabled=False,
            alive=False,
            last_success_at=None,
            consecutive_failures=0,
            last_error=None,
            retry_in_s=None,
            stale_after_s=stale_after_s,
        )
        return HealthPublic(status="ok", problem=None, driver=off)
    state = driver.state()
    if not show_errors and state.last_error is not None:
        state = dataclasses.replace(state, last_error=HIDDEN_ERROR)
    problem = state.problem(datetime.now(UTC), stale_after_s)
    return HealthPublic(
        status="ok" if problem is None else "unhealthy",
        problem=problem,
        driver=DriverHealth(
            enabled=True,
            alive=state.alive,
            last_success_at=state.last_success_at,
            consecutive_failures=state.consecutive_failures,
            last_error=state.last_error,
            retry_in_s=state.retry_in_s,
            stale_after_s=stale_after_s,
        ),
    )


def create_app(settings: Settings, bind_host: str | None = None) -> FastAPI:
    """`bind_host`: the address the server listens on (default: CLADE_SERVICE_URL's host); with
    CLADE_READS_REQUIRE_TOKEN unset, reads need a token unless it is a loopback address."""
    host = bind_host or urlparse(settings.service_url).hostname or "127.0.0.1"
    settings = settings.model_copy(update={"reads_require_token": settings.reads_need_token(host)})
    services = build_services(settings)

    # One tick holds one session at a time; a spare connection covers a pre-ping reconnect.
    driver_engine = make_engine(settings.resolved_database_url, pool_size=2, max_overflow=2)
    driver = make_driver(settings, services, driver_engine) if settings.run_driver_enabled else None
    metrics = ServiceMetrics(
        settings=settings,
        sessions=services.sessions,
        driver_state=driver.state if driver is not None else None,
    )

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if driver is not None:
            driver.start()
        yield
        if driver is not None:
            driver.stop()
        services.engine.dispose()
        driver_engine.dispose()

    app = FastAPI(
        title="Clade",
        version="0.1.0",
        description="An evolutionary archive of self-improving coding agents.",
        lifespan=lifespan,
        docs_url=None,  # served from local assets by api_docs; ReDoc not at all
        redoc_url=None,
    )
    app.state.services = services
    app.state.driver = driver
    app.state.metrics = metrics
    errors.install(app)
    document = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = add_links(errors_in_json(document()))
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]

    app.add_middleware(BodyLimitMiddleware, limit=settings.max_upload_bytes)
    app.add_middleware(SecurityHeadersMiddleware)

    @app.get("/metrics", include_in_schema=False, dependencies=[Reader])
    def prometheus_metrics() -> Response:
        """Prometheus text exposition; needs the read token only when reads require one."""
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    for router in (
        runs.router,
        agents.router,
        seeds.router,
        worker.router,
        worker_tokens.router,
        benchmarks.router,
    ):
        app.include_router(router)
    app.include_router(api_docs.router)
    app.include_router(dashboard.router)  # pages for every path outside /api/

    @app.get(
        "/api/health",
        tags=["system"],
        response_model=HealthPublic,
        responses={503: {"model": HealthPublic, "description": "the run driver is stale or stopped"}},
    )
    def health(admin: IsAdminDep) -> JSONResponse:
        """Unhealthy when the run driver is enabled and its thread died or its last successful
        tick is older than `CLADE_DRIVER_STALE_AFTER_S`. The last error's text is shown with
        the admin token only (it may name host paths or SQL)."""
        body = _health(driver, settings.resolved_driver_stale_after_s, show_errors=admin)
        code = status.HTTP_200_OK if body.status == "ok" else status.HTTP_503_SERVICE_UNAVAILABLE
        return JSONResponse(status_code=code, content=body.model_dump(mode="json"))

    # Load balancers probe with HEAD: the same status and headers (the server sends no body).
    # Kept out of the OpenAPI document, where it would repeat GET's operation id.
    app.add_api_route("/api/health", health, methods=["HEAD"], include_in_schema=False)

    @app.get(
        "/api/admin/consistency", tags=["system"], dependencies=[AdminOnly], responses=error_responses(401)
    )
    def check_consistency() -> ConsistencyPublic:
        report = consistency.check(services.archive.git, services.sessions, repair=False)
        return ConsistencyPublic.model_validate(report.model_dump())

    return app
