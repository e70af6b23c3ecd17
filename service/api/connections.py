"""How the HTTP server treats connections, so that clients which never finish cannot pile up.

uvicorn keeps a connection that never completes its request headers for ever, and accepts
connections until the process runs out of file descriptors (then every request is reset and
the run driver cannot open a file). Here:

- a request's headers must be complete within `header_timeout_s` of the connection opening
  (or, on a kept-alive connection, of the first byte after the last answer), else the
  connection is closed;
- at most `max_connections` connections are open at once, fewer when the descriptor limit
  leaves less than `fd_reserve` for everything else (database, git, logs); a connection past
  the limit is closed as soon as it is accepted, so its descriptor is given back at once;
- a request line and headers longer than MAX_HEADER_BYTES (64 KiB) are answered 431 and the
  connection closed: httptools has no limit of its own (a 20 MB header line was served, and a
  header streamed slowly grew the process by the size sent), so the bytes are counted before
  they reach its parser;
- an idle kept-alive connection is closed after `keep_alive_timeout_s` (uvicorn's own timer);
- a connection whose request is answered while its body still comes in (a 401 or 413 sent before
  the body is read, an endpoint that reads none) is closed: uvicorn would read that body to its
  end, and a byte a second would hold the connection for ever.
"""

from __future__ import annotations

import asyncio
import logging
import resource
from typing import Any

from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol
from uvicorn.server import ServerState

from contracts.settings import Settings

log = logging.getLogger("clade.service")

# The request line and headers of one request, together (docs/operations.md). A socket read
# that also holds the end of a previous request's body is not counted against the next one,
# so what a request's headers can hold is bounded by this plus one read (256 KiB at most).
MAX_HEADER_BYTES = 64 * 1024


def raise_fd_limit() -> int:
    """Raise the soft descriptor limit to the hard one; the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):  # a container may refuse; the old limit stays
            return soft
        return target
    return soft


def connection_limit(settings: Settings, fd_limit: int) -> int:
    """`max_connections`, or fewer so that `fd_reserve` descriptors always stay for the rest."""
    return max(1, min(settings.max_connections, fd_limit - settings.fd_reserve))


class BoundedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a deadline on request headers and a connection cap."""

    header_timeout_s: float = 10.0
    max_connections: int = 1000
    max_header_bytes: int = MAX_HEADER_BYTES

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._header_deadline: asyncio.TimerHandle | None = None
        # Bytes of the current request's line and headers read so far; None once they are complete.
        self._header_bytes: int | None = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        over = len(self.connections) >= self.max_connections
        super().connection_made(transport)
        if over:
            # Closed before a byte is read: a flood costs a descriptor for an instant only.
            log.warning("refused a connection: %d open (CLADE_MAX_CONNECTIONS)", len(self.connections) - 1)
            transport.abort()
            return
        self._start_header_deadline()

    def data_received(self, data: bytes) -> None:
        if self.cycle is None or self.cycle.response_complete:
            # Between requests: bytes that begin no request (the parser skips blank lines) would
            # otherwise only put off the idle timer, for ever; they start the header deadline.
            self._start_header_deadline()
        if self._header_bytes is None:  # a body: bounded by the body limit, not here
            super().data_received(data)
            return
        room = self.max_header_bytes - self._header_bytes
        self._header_bytes += min(len(data), room)
        super().data_received(data[:room])
        if len(data) <= room or self.transport.is_closing():
            return
        if self._header_bytes is not None:
            self._refuse_headers()
            return
        self.data_received(data[room:])  # the headers ended within the limit: the rest is a body

    def _refuse_headers(self) -> None:
        log.warning("refused a request whose headers are over %d bytes", self.max_header_bytes)
        message = f"request line and headers over {self.max_header_bytes} bytes".encode()
        content = [STATUS_LINE[431]]
        for name, value in self.server_state.default_headers:
            content += [name, b": ", value, b"\r\n"]
        content += [
            b"content-type: text/plain; charset=utf-8\r\n",
            b"content-length: " + str(len(message)).encode() + b"\r\n",
            b"connection: close\r\n\r\n",
            message,
        ]
        self.transport.write(b"".join(content))
        self.transport.close()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._start_header_deadline()  # a later request on a kept-alive connection

    def on_headers_complete(self) -> None:
        self._cancel_header_deadline()
        self._header_bytes = None
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._header_bytes = 0  # what follows is the next request's
        super().on_message_complete()

    def on_response_complete(self) -> None:
        answered = self.cycle
        if (
            answered is not None
            and answered.more_body
            and not self.pipeline
            and not self.transport.is_closing()
        ):
            # Answered before its body ended: nobody reads the rest (close sends what is written).
            self.transport.close()
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_deadline()
        super().connection_lost(exc)

    def _start_header_deadline(self) -> None:
        if self._header_deadline is None:
            self._header_deadline = self.loop.call_later(self.header_timeout_s, self._headers_too_slow)

    def _cancel_header_deadline(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _headers_too_slow(self) -> None:
        self._header_deadline = None
        if not self.transport.is_closing():
            log.warning("closed a connection whose request headers took over %g s", self.header_timeout_s)
            self.transport.abort()


def bounded_protocol(settings: Settings, max_connections: int) -> type[BoundedHttpProtocol]:
    """The protocol class for this server's settings (uvicorn builds one instance a connection)."""
    return type(
        "ServiceHttpProtocol",
        (BoundedHttpProtocol,),
        {"header_timeout_s": settings.header_timeout_s, "max_connections": max_connections},
    )


def server_options(settings: Settings) -> dict[str, Any]:
    """uvicorn.run's keyword arguments for connection handling; raises the descriptor limit."""
    limit = connection_limit(settings, raise_fd_limit())
    return {
        "http": bounded_protocol(settings, limit),
        # uvicorn answers 503 to requests past this many running requests (its count of
        # connections includes the asking one, hence the +1: every accepted connection is served).
        "limit_concurrency": limit + 1,
        "timeout_keep_alive": settings.keep_alive_timeout_s,
        "backlog": min(2048, limit),
    }
