"""Map the archive's exceptions to HTTP answers, so routers raise domain errors only."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request, Response, status
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError, OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException

from benchmarks.catalog import BenchmarkLoadPending
from contracts.config import ConfigFieldError
from contracts.errors import ConflictError, InvalidAgentError, NotFoundError, PatchError, StorageFullError
from service.archive.limits import TooLargeError
from service.archive.storage import as_storage_full
from service.archive.store import PatchTooLargeError
from service.job_secrets import JobSecretError
from service.runs import UnknownAgentError

Handler = Callable[[Request, Exception], Awaitable[Response]]


def _handler(code: int) -> Handler:
    async def handle(_request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse(status_code=code, content={"detail": str(exc)})

    return handle


def unprocessable(loc: list[str | int], message: str, kind: str) -> JSONResponse:
    """A 422 in the one shape every 422 has (FastAPI's validation errors): a list of issues."""
    detail = [{"loc": loc, "msg": message, "type": kind}]
    return JSONResponse(status_code=status.HTTP_422_UNPROCESSABLE_CONTENT, content={"detail": detail})


async def _bad_field(_request: Request, exc: Exception) -> JSONResponse:
    """A config value that is well-formed but names nothing real: 422 at its field path."""
    assert isinstance(exc, UnknownAgentError | ConfigFieldError)
    if isinstance(exc, ConfigFieldError) and exc.issues:  # several, each in its own words and kind
        detail = [{"loc": ["body", *loc], "msg": message, "type": kind} for loc, message, kind in exc.issues]
        return JSONResponse(status_code=status.HTTP_422_UNPROCESSABLE_CONTENT, content={"detail": detail})
    loc: list[str | int] = ["body", *(int(p) if p.isdigit() else p for p in exc.field.split("."))]
    # The field is named once, by `loc`: the CLI and the dashboard print it before the message.
    return unprocessable(loc, exc.message, "unknown_reference")


def _refused(loc: list[str | int], kind: str) -> Handler:
    """A domain refusal of one part of the request (the patch, the uploaded file)."""

    async def handle(_request: Request, exc: Exception) -> JSONResponse:
        return unprocessable(loc, str(exc), kind)

    return handle


async def _invalid_request(_request: Request, exc: Exception) -> JSONResponse:
    """FastAPI's validation errors, without the `input` each echoes: an input may be what JSON
    cannot carry (NaN), a secret, or megabytes of patch."""
    assert isinstance(exc, RequestValidationError)
    detail = [{"loc": list(e["loc"]), "msg": str(e["msg"]), "type": str(e["type"])} for e in exc.errors()]
    return JSONResponse(status_code=status.HTTP_422_UNPROCESSABLE_CONTENT, content={"detail": detail})


async def _http_error(request: Request, exc: Exception) -> Response:
    """FastAPI answers 400 to a body it cannot parse (a broken multipart form): a 422, as any other
    malformed request."""
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == status.HTTP_400_BAD_REQUEST:
        return unprocessable(["body"], str(exc.detail), "body_unreadable")
    return await http_exception_handler(request, exc)


async def _database_error(request: Request, exc: Exception) -> JSONResponse:
    """A database write that found the disk full is a 507 like the archive's; a database that cannot
    be reached (restarting, its connection cut) a 503 to retry; any other error stays a 500."""
    assert isinstance(exc, DBAPIError)
    full = as_storage_full(exc, request.app.state.services.settings.data_dir)
    if full is not None:
        return JSONResponse(status_code=status.HTTP_507_INSUFFICIENT_STORAGE, content={"detail": str(full)})
    if isinstance(exc, OperationalError) or exc.connection_invalidated:
        lines = str(exc.orig or exc).strip().splitlines()
        cause = lines[0] if lines else type(exc).__name__
        return JSONResponse(
            status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
            content={"detail": f"database unavailable, retry later: {cause}"},
            headers={"Retry-After": "5"},
        )
    raise exc


async def _still_loading(_request: Request, exc: Exception) -> JSONResponse:
    """A benchmark that loads longer than a request waits: 503 to retry; the load goes on."""
    return JSONResponse(
        status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
        content={"detail": str(exc)},
        headers={"Retry-After": "10"},
    )


def install(app: FastAPI) -> None:
    app.add_exception_handler(BenchmarkLoadPending, _still_loading)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(UnknownAgentError, _bad_field)
    app.add_exception_handler(ConfigFieldError, _bad_field)
    app.add_exception_handler(NotFoundError, _handler(status.HTTP_404_NOT_FOUND))
    app.add_exception_handler(ConflictError, _handler(status.HTTP_409_CONFLICT))
    app.add_exception_handler(JobSecretError, _handler(status.HTTP_403_FORBIDDEN))
    app.add_exception_handler(PatchTooLargeError, _handler(status.HTTP_413_CONTENT_TOO_LARGE))
    app.add_exception_handler(TooLargeError, _handler(status.HTTP_413_CONTENT_TOO_LARGE))
    # Patches come only in a child submission's `patch`, agents to check only in a seed's `file`
    # (a child's broken agent.toml is archived and rejected, not refused).
    app.add_exception_handler(PatchError, _refused(["body", "patch"], "patch_refused"))
    app.add_exception_handler(InvalidAgentError, _refused(["body", "file"], "invalid_agent"))
    # A full disk is not the request's fault: 507, and the same request works once space is freed.
    app.add_exception_handler(StorageFullError, _handler(status.HTTP_507_INSUFFICIENT_STORAGE))
    app.add_exception_handler(DBAPIError, _database_error)
