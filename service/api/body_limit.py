"""Request bodies over the upload limit are refused with 413 however they are framed.

A declared Content-Length over the limit is refused before anything is read. A chunked (or
understated) body is counted as it arrives: the first message that takes the count past the
limit ends the request with 413, so at most the limit is ever held.

A refused body is never read to its end, so the connection cannot carry another request: the 413
says `Connection: close`, or a client would send its next request down a socket the server drops.
"""

from __future__ import annotations

import json

from fastapi import HTTPException, status
from starlette.types import ASGIApp, Message, Receive, Scope, Send

_CLOSE = (b"connection", b"close")


class BodyTooLargeError(HTTPException):
    """An HTTPException, so the framework's own body parsing lets it through as a 413."""

    def __init__(self, limit: int) -> None:
        super().__init__(status.HTTP_413_CONTENT_TOO_LARGE, detail=_message(limit))


def _message(limit: int) -> str:
    return f"request body exceeds {limit} bytes (max_upload_bytes, CLADE_MAX_UPLOAD_BYTES)"


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, *, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length", b"")
        if length.isdigit() and int(length) > self.limit:
            await _refuse(send, self.limit)
            return
        received = 0
        started = False
        refused = False

        async def counting_receive() -> Message:
            nonlocal received, refused
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    refused = True
                    raise BodyTooLargeError(self.limit)
            return message

        async def watching_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                if refused:
                    message = {**message, "headers": [*message.get("headers", []), _CLOSE]}
            await send(message)

        try:
            await self.app(scope, counting_receive, watching_send)
        except BodyTooLargeError:
            # Raised where no handler turned it into a response (e.g. a body read by middleware).
            if started:
                raise
            await _refuse(send, self.limit)


async def _refuse(send: Send, limit: int) -> None:
    body = json.dumps({"detail": _message(limit)}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status.HTTP_413_CONTENT_TOO_LARGE,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                _CLOSE,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
