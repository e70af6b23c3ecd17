"""JSON-over-HTTP server machinery shared by the gateway (unix socket) and the scripted server.

Standard library only: a thread per connection is plenty for one sandbox, and
shutdown has to be prompt even while an agent holds a keep-alive connection,
so every open connection is tracked and closed on `stop`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import socketserver
import sys
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

DEFAULT_MAX_BODY = 16 * 1024 * 1024
DEFAULT_MAX_CONNECTIONS = 64
CHAT_ROUTE = "/chat/completions"
MODELS_ROUTE = "/models"


class HTTPFailure(Exception):
    """A request the handler refuses; becomes an OpenAI-style error response."""

    def __init__(
        self,
        status: int,
        message: str,
        error_type: str = "invalid_request_error",
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.error_type = error_type
        self.code = code


def openai_error(message: str, error_type: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}


class JSONHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the openai client expects
    timeout = 120  # an idle keep-alive connection is dropped after this many seconds
    max_body = DEFAULT_MAX_BODY

    @property
    def route(self) -> str:
        """The request path without query, trailing slash or the optional `/v1` prefix."""
        path = urlsplit(self.path).path.rstrip("/")
        return path.removeprefix("/v1") if path.startswith("/v1/") else path

    def send_not_found(self, headers: Mapping[str, str] | None = None) -> None:
        self.discard_body()
        self.send_json(404, openai_error(f"no route {self.path}", "not_found_error"), headers)

    def discard_body(self) -> None:
        """Read and drop the request body so the keep-alive connection stays usable; when it
        cannot be read safely (chunked, bad or oversized length), the connection is closed."""
        length = self.headers.get("Content-Length", "0")
        chunked = "chunked" in self.headers.get("Transfer-Encoding", "").lower()
        if chunked or not length.isdigit() or int(length) > self.max_body:
            self.close_connection = True
        elif int(length) > 0:
            self.rfile.read(int(length))

    def read_json(self) -> Any:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self.close_connection = True
            raise HTTPFailure(411, "chunked request bodies are not supported; send Content-Length")
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError as exc:
            self.close_connection = True
            raise HTTPFailure(400, "invalid Content-Length") from exc
        if length > self.max_body:
            self.close_connection = True
            raise HTTPFailure(413, f"request body over {self.max_body} bytes")
        raw = self.rfile.read(length) if length > 0 else b""
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise HTTPFailure(400, f"request body is not valid JSON: {exc}") from exc

    def send_json(self, status: int, payload: object, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            # Say so, or a keep-alive client sends its next request into a closed socket.
            self.send_header("Connection", "close")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def send_failure(self, failure: HTTPFailure, headers: Mapping[str, str] | None = None) -> None:
        body = openai_error(failure.message, failure.error_type, failure.code)
        self.send_json(failure.status, body, headers)

    def address_string(self) -> str:
        # A unix socket peer has no (host, port); the base class would index an empty string.
        return self.client_address[0] if isinstance(self.client_address, tuple) else "unix"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)


class _ConnectionTracking(socketserver.ThreadingMixIn):
    """Remembers open connections so that `close_connections` can end keep-alive readers.

    At most `max_connections` are served at once (a thread each); more are closed
    at once, so an agent cannot make the worker start threads without limit.
    """

    daemon_threads = True
    block_on_close = False

    def __init__(self, max_connections: int) -> None:
        self.max_connections = max_connections
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            full = len(self._open) >= self.max_connections
            if not full:
                self._open.add(request)
        if full:
            log.warning("refusing a connection: %d already open", self.max_connections)
            super().shutdown_request(request)  # type: ignore[misc]
            return
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)  # type: ignore[misc]

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Called from inside socketserver's except block. A peer that went away (the
        # sandbox was killed, or we closed the connection in `stop`) is routine; anything
        # else is a bug in a handler and is logged with its traceback, not printed.
        error = sys.exc_info()[1]
        if isinstance(error, OSError):
            log.debug("connection ended early: %s", error)
        else:
            log.error("request handler failed", exc_info=error)

    def close_connections(self) -> None:
        with self._open_lock:
            conns = list(self._open)
        for conn in conns:
            # OSError: already closed by its handler, nothing left to end.
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class UnixHTTPServer(_ConnectionTracking, socketserver.UnixStreamServer):
    def __init__(
        self, path: str, handler: type[BaseHTTPRequestHandler], max_connections: int = DEFAULT_MAX_CONNECTIONS
    ) -> None:
        _ConnectionTracking.__init__(self, max_connections)
        socketserver.UnixStreamServer.__init__(self, path, handler)


class TCPHTTPServer(_ConnectionTracking, socketserver.TCPServer):
    # Not http.server.HTTPServer: its server_bind does a reverse DNS lookup, slow offline.
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
    ) -> None:
        _ConnectionTracking.__init__(self, max_connections)
        socketserver.TCPServer.__init__(self, address, handler)


class ServerThread:
    """Runs a tracking server's loop in a daemon thread; `stop` returns within about 0.1 s."""

    def __init__(self, server: UnixHTTPServer | TCPHTTPServer, name: str) -> None:
        self.server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=name, daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        if self._thread.is_alive():
            self.server.shutdown()
            self._thread.join()
        self.server.close_connections()
        self.server.server_close()
