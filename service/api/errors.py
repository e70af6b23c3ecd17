"""Map the archive's exceptions to HTTP answers, so routers raise domain errors only."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request, status
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError

from contracts.config import ConfigFieldError
from contracts.errors import ConflictError, InvalidAgentError, NotFoundError, PatchError, StorageFullError
from service.api.schemas import StorageFullPublic
from service.archive.limits import TooLargeError
from service.archive.storage import as_storage_full
from service.archive.store import PatchTooLargeError
from service.runs import UnknownAgentError

# For the routes that write to the archive: a full disk answers 507 (documented in the OpenAPI).
STORAGE_FULL: dict[int | str, dict[str, Any]] = {
    status.HTTP_507_INSUFFICIENT_STORAGE: {
        "model": StorageFullPublic,
        "description": "the archive's disk is full: nothing was written; retry once space is freed",
    }
}

Handler = Callable[[Request, Exception], Awaitable[JSONResponse]]


def _handler(code: int) -> Handler:
    async def handle(_request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse(status_code=code, content={"detail": str(exc)})

    return handle


async def _bad_field(_request: Request, exc: Exception) -> JSONResponse:
    """A config value that is well-formed but names nothing real: 422 at its field path."""
    assert isinstance(exc, UnknownAgentError | ConfigFieldError)
    loc: list[str | int] = ["body", *(int(p) if p.isdigit() else p for p in exc.field.split("."))]
    detail = [{"loc": loc, "msg": str(exc), "type": "unknown_reference"}]
    return JSONResponse(status_code=status.HTTP_422_UNPROCESSABLE_CONTENT, content={"detail": detail})


async def _database_error(request: Request, exc: Exception) -> JSONResponse:
    """A database write that found the disk full is a 507 like the archive's; any other error stays a 500."""
    assert isinstance(exc, DBAPIError)
    full = as_storage_full(exc, request.app.state.services.settings.data_dir)
    if full is None:
        raise exc
    return JSONResponse(status_code=status.HTTP_507_INSUFFICIENT_STORAGE, content={"detail": str(full)})


def install(app: FastAPI) -> None:
    app.add_exception_handler(UnknownAgentError, _bad_field)
    app.add_exception_handler(ConfigFieldError, _bad_field)
    app.add_exception_handler(NotFoundError, _handler(status.HTTP_404_NOT_FOUND))
    app.add_exception_handler(ConflictError, _handler(status.HTTP_409_CONFLICT))
    app.add_exception_handler(PatchTooLargeError, _handler(status.HTTP_413_CONTENT_TOO_LARGE))
    app.add_exception_handler(TooLargeError, _handler(status.HTTP_413_CONTENT_TOO_LARGE))
    app.add_exception_handler(PatchError, _handler(status.HTTP_422_UNPROCESSABLE_CONTENT))
    app.add_exception_handler(InvalidAgentError, _handler(status.HTTP_422_UNPROCESSABLE_CONTENT))
    # A full disk is not the request's fault: 507, and the same request works once space is freed.
    app.add_exception_handler(StorageFullError, _handler(status.HTTP_507_INSUFFICIENT_STORAGE))
    app.add_exception_handler(DBAPIError, _database_error)
