"""Map the archive's exceptions to HTTP answers, so routers raise domain errors only."""

from __future__ import annotations

from fastapi import FastAPI, Request, status
from fastapi.responses import JSONResponse

from service.archive.errors import ConflictError, InvalidAgentError, NotFoundError, PatchError
from service.archive.store import PatchTooLargeError
from service.runs import UnknownAgentError


def _handler(code: int):  # type: ignore[no-untyped-def]
    async def handle(_request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse(status_code=code, content={"detail": str(exc)})

    return handle


async def _unknown_agent(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, UnknownAgentError)
    loc = ["body", *exc.field.split(".")]
    detail = [{"loc": loc, "msg": str(exc), "type": "unknown_agent"}]
    return JSONResponse(status_code=status.HTTP_422_UNPROCESSABLE_CONTENT, content={"detail": detail})


def install(app: FastAPI) -> None:
    app.add_exception_handler(UnknownAgentError, _unknown_agent)
    app.add_exception_handler(NotFoundError, _handler(status.HTTP_404_NOT_FOUND))
    app.add_exception_handler(ConflictError, _handler(status.HTTP_409_CONFLICT))
    app.add_exception_handler(PatchTooLargeError, _handler(status.HTTP_413_CONTENT_TOO_LARGE))
    app.add_exception_handler(PatchError, _handler(status.HTTP_422_UNPROCESSABLE_CONTENT))
    app.add_exception_handler(InvalidAgentError, _handler(status.HTTP_422_UNPROCESSABLE_CONTENT))
