"""A request that lacks the token its endpoint needs is refused before its body is read, against a
real `clade serve`: otherwise anyone could make the service take in (and parse, on its event
loop) bodies up to the upload limit on every admin and worker endpoint, the 401 coming only after."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.servers import ServiceProcess, service_env, start_service

DECLARED = 50_000_000  # what each request says its body holds; it sends a kilobyte of it
START = b"[" + b"0," * 500


@contextmanager
def _service(tmp_path: Path) -> Iterator[ServiceProcess]:
    env = service_env(tmp_path / "data", f"sqlite:///{tmp_path / 'c.db'}", 0)
    service = start_service(env)
    try:
        yield service
    finally:
        service.stop()


def _answer_to_a_body_never_sent(
    url: str, path: str, headers: dict[str, str], deadline_s: float = 60
) -> bytes:
    """The server's answer to a POST of `path` that declares a large body and sends its start only
    (b"" if none came before the deadline: the server waits for the rest of the body)."""
    host, port = url.removeprefix("http://").split(":")
    lines = [f"POST {path} HTTP/1.1", "Host: x", f"Content-Length: {DECLARED}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + START)
        sock.settimeout(0.5)
        answer = b""
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline and not _complete(answer):
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                continue
            if not chunk:
                break
            answer += chunk
        return answer


def _complete(answer: bytes) -> bool:
    head, sep, body = answer.partition(b"\r\n\r\n")
    if not sep:
        return False
    lengths = [
        line.split(b":", 1)[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
    ]
    return len(body) >= int(lengths[0]) if lengths else True


def test_a_missing_or_wrong_token_is_refused_before_the_body_is_read(tmp_path: Path) -> None:
    with _service(tmp_path) as service:
        worker_token = service.secrets["worker_token"]
        json_body = {"Content-Type": "application/json"}
        cases = [
            ("/api/admin/worker-tokens", json_body, "admin"),
            ("/api/runs", json_body, "admin"),
            ("/api/runs", json_body | {"Authorization": f"Bearer {worker_token}"}, "admin"),
            ("/api/dashboard/parse-config", json_body, "admin"),
            ("/api/seeds", {"Content-Type": "multipart/form-data; boundary=b"}, "admin"),
            ("/api/worker/evaluations/e1/result", json_body, "worker"),
            ("/api/worker/steps/s1/child", json_body | {"Authorization": "Bearer not-a-token"}, "worker"),
        ]
        for path, headers, role in cases:
            answer = _answer_to_a_body_never_sent(service.url, path, headers)
            assert answer.startswith(b"HTTP/1.1 401"), (path, headers, answer[:200])
            detail = json.loads(answer.split(b"\r\n\r\n", 1)[1] or b"{}").get("detail", "")
            assert f"needs the {role} token" in detail, (path, answer[:400])
        # The right token still gets its body read and answered.
        with service.admin as admin:
            issued = admin.post("/api/admin/worker-tokens", json={"name": "box-1"})
        assert issued.status_code == 201, issued.text
        with httpx.Client(base_url=service.url, timeout=60) as client:
            refused = client.post(
                "/api/worker/evaluations/e1/result",
                json={"result": {"resolved": True}},
                headers={"Authorization": f"Bearer {issued.json()['token']}"},
            )
        assert refused.status_code == 404, refused.text  # past the token: no such evaluation


def _closed_while_trickling(url: str, request: bytes, deadline_s: float = 60) -> tuple[bytes, bool]:
    """Send `request` (headers and the start of a body), then a byte of body every 0.2 s: what the
    server answered and whether it closed the connection before the deadline."""
    host, port = url.removeprefix("http://").split(":")
    answer = b""
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(request)
        sock.settimeout(0.2)
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            try:
                sock.sendall(b" ")
                chunk = sock.recv(65536)
            except TimeoutError:
                continue
            except (ConnectionResetError, BrokenPipeError):
                return answer, True
            if not chunk:
                return answer, True
            answer += chunk
    return answer, False


def test_a_body_that_goes_on_after_its_answer_does_not_hold_the_connection(tmp_path: Path) -> None:
    """Answered (401, 413, or an endpoint that reads no body), a request whose body still trickles in
    is closed: else one byte a second keeps the connection, and its slot, for ever."""
    with _service(tmp_path) as service:
        for head in [
            b"POST /api/admin/worker-tokens HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n",
            b"POST /api/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999999\r\n",  # over the limit
            b"GET /api/health HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n",
        ]:
            answer, closed = _closed_while_trickling(
                service.url, head + b"Content-Type: application/json\r\n\r\n{"
            )
            assert answer.startswith((b"HTTP/1.1 401", b"HTTP/1.1 413", b"HTTP/1.1 200")), (
                head,
                answer[:200],
            )
            assert closed, (head, answer[:200])
        # A request whose body the endpoint read whole keeps its connection for the next one.
        # (A refused one may keep it or not, as its body had arrived or not when it was answered.)
        admin = {"Authorization": f"Bearer {service.secrets['admin_token']}"}
        with httpx.Client(base_url=service.url, timeout=60, headers=admin) as client:
            first = client.post("/api/admin/worker-tokens", json={"name": "a"})
            second = client.get("/api/health")
        assert (first.status_code, second.status_code) == (201, 200)
        assert first.extensions["network_stream"] is second.extensions["network_stream"]
