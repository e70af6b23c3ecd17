"""A fault proxy: a small HTTP server (real sockets, 127.0.0.1, port 0) in front of an upstream.

Each request it receives takes the next fault from its plan (when the plan is empty, requests
pass through to the upstream untouched): an answer of its own (any status, headers and body:
OpenAI-shaped errors, `{"error": "text"}`, `{"detail": ...}`, plain text, HTML), a reset
connection, a hang (no answer until the client gives up), the upstream's answer cut short of its
Content-Length, an answer that is not JSON, or the upstream's answer held back until the test
releases it (a slow reply). It sits in front of the scripted model in the fast tests (the
scripted model says it is one) and in front of the real llama-server by hand and in one test.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import httpx

FaultKind = Literal["pass", "answer", "reset", "hang", "truncate", "slow"]
HANG_LIMIT_S = 60.0  # a hanging request is let go after this, or when the proxy closes


@dataclass(frozen=True)
class Fault:
    kind: FaultKind
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()
    release: threading.Event | None = None  # "slow": the reply waits for this


def passthrough() -> Fault:
    return Fault("pass")


def answer(
    status: int,
    body: str | bytes,
    content_type: str = "application/json",
    headers: Iterable[tuple[str, str]] = (),
) -> Fault:
    data = body.encode() if isinstance(body, str) else body
    return Fault("answer", status, data, content_type, tuple(headers))


def openai_error(
    status: int,
    message: str,
    error_type: str,
    code: str | None = None,
    headers: Iterable[tuple[str, str]] = (),
) -> Fault:
    """An error in OpenAI's own shape."""
    body = {"error": {"message": message, "type": error_type, "param": None, "code": code}}
    return answer(status, json.dumps(body), headers=headers)


def rate_limited(retry_after: str | None = "1") -> Fault:
    headers = [("Retry-After", retry_after)] if retry_after is not None else []
    return openai_error(429, "Rate limit reached for requests", "requests", "rate_limit_exceeded", headers)


def context_overflow() -> Fault:
    """OpenAI's answer to a prompt longer than the model's context."""
    return openai_error(
        400,
        "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
        "invalid_request_error",
        "context_length_exceeded",
    )


def reset() -> Fault:
    return Fault("reset")


def hang() -> Fault:
    return Fault("hang")


def truncated() -> Fault:
    """The upstream's answer with its full Content-Length, cut off halfway."""
    return Fault("truncate")


def non_json() -> Fault:
    return answer(200, "<html><body>Service temporarily unavailable</body></html>", "text/html")


def slow(release: threading.Event) -> Fault:
    return Fault("slow", release=release)


@dataclass
class Seen:
    path: str
    body: Any
    fault: FaultKind


@dataclass
class FaultProxy:
    """`with FaultProxy(upstream_url) as proxy:` then `proxy.plan(...)`; `proxy.base_url` ends in /v1."""

    upstream_url: str  # with /v1
    seen: list[Seen] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._faults: deque[Fault] = deque()
        self._lock = threading.Condition()
        self._closing = threading.Event()
        self._http = httpx.Client(base_url=self.upstream_url.rstrip("/") + "/", timeout=120)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def plan(self, *faults: Fault) -> None:
        with self._lock:
            self._faults.extend(faults)

    def wait_for_requests(self, count: int, timeout: float = 30.0) -> None:
        with self._lock:
            if not self._lock.wait_for(lambda: len(self.seen) >= count, timeout=timeout):
                raise AssertionError(f"the proxy saw {len(self.seen)} requests, not {count}, in {timeout}s")

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._http.close()

    def _next(self, path: str, body: Any) -> Fault:
        with self._lock:
            fault = self._faults.popleft() if self._faults else passthrough()
            self.seen.append(Seen(path, body, fault.kind))
            self._lock.notify_all()
        return fault

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw
                self.serve(proxy._next(self.path, body), raw)

            def do_GET(self) -> None:
                self.serve(proxy._next(self.path, None), None)

            def serve(self, fault: Fault, raw: bytes | None) -> None:
                if fault.kind == "reset":
                    # Linger 0: close sends a RST, as a crashed or restarted server does.
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.close_connection = True
                    return
                if fault.kind == "hang":
                    proxy._closing.wait(HANG_LIMIT_S)
                    self.close_connection = True
                    return
                if fault.kind == "answer":
                    self.reply(fault.status, fault.body, fault.content_type, fault.headers)
                    return
                if fault.kind == "slow" and fault.release is not None:
                    fault.release.wait(HANG_LIMIT_S)
                status, data, content_type = self.forward(raw)
                if fault.kind == "truncate":
                    self.reply(status, data, content_type, (), cut=len(data) // 2)
                else:
                    self.reply(status, data, content_type, ())

            def forward(self, raw: bytes | None) -> tuple[int, bytes, str]:
                path = self.path.removeprefix("/v1/").lstrip("/")
                headers = {
                    k: v for k, v in self.headers.items() if k.lower() in ("authorization", "content-type")
                }
                method = "POST" if raw is not None else "GET"
                response = proxy._http.request(method, path, content=raw, headers=headers)
                return response.status_code, response.content, response.headers.get("content-type", "")

            def reply(
                self,
                status: int,
                data: bytes,
                content_type: str,
                headers: Iterable[tuple[str, str]],
                cut: int | None = None,
            ) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                for name, value in headers:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data if cut is None else data[:cut])
                self.close_connection = True

            def log_message(self, *_: Any) -> None:
                pass

        return Handler
