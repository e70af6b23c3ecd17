"""Clients that never finish their request, against a real `clade serve` on loopback sockets."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx

from tests.helpers import tar_of, write_agent
from tests.servers import ServiceProcess, service_env, start_service


@contextmanager
def _service(tmp_path: Path, **settings: str) -> Iterator[ServiceProcess]:
    env = service_env(tmp_path / "data", f"sqlite:///{tmp_path / 'c.db'}", 0, **settings)
    service = start_service(env)
    try:
        yield service
    finally:
        service.stop()


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=60)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    return sock


def _closed_by_server(sock: socket.socket, deadline_s: float, trickle: bytes = b"") -> bool:
    """Whether the server closes `sock` before the deadline, while we send `trickle` now and then."""
    deadline = time.monotonic() + deadline_s
    sock.settimeout(0.5)
    while time.monotonic() < deadline:
        try:
            if trickle:
                sock.sendall(trickle)
            if sock.recv(4096) == b"":
                return True
        except TimeoutError:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return True
    return False


def test_headers_that_never_end_are_cut_off(tmp_path: Path) -> None:
    with _service(tmp_path, CLADE_HEADER_TIMEOUT_S="1") as service:
        with ExitStack() as stack:
            loris = [stack.enter_context(_connect(service.url)) for _ in range(8)]
            for sock in loris:
                sock.sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\n")
            silent = stack.enter_context(_connect(service.url))  # connects, never sends a byte
            # A slow header line every half second: each arrives, the headers never end.
            assert all(_closed_by_server(sock, 60, trickle=b"X-a: b\r\n") for sock in loris)
            assert _closed_by_server(silent, 60)
            assert httpx.get(f"{service.url}/api/health", timeout=30).status_code == 200
            # A kept-alive connection's next request has the same deadline on its headers.
            kept = stack.enter_context(_connect(service.url))
            kept.sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\n\r\n")
            kept.settimeout(30)
            assert kept.recv(4096).startswith(b"HTTP/1.1 200")
            kept.sendall(b"GET /api/health HTTP/1.1\r\n")
            assert _closed_by_server(kept, 60, trickle=b"X-a: b\r\n")
        assert "request headers took over 1 s" in service.log()


def test_connections_past_the_limit_are_closed_at_once(tmp_path: Path) -> None:
    with _service(tmp_path, CLADE_MAX_CONNECTIONS="12", CLADE_HEADER_TIMEOUT_S="600") as service:
        with ExitStack() as stack:
            held = [stack.enter_context(_connect(service.url)) for _ in range(12)]
            extra = stack.enter_context(_connect(service.url))
            assert _closed_by_server(extra, 60)
            for sock in held:
                sock.close()
            # Once the held connections are gone, requests are served again.
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    if httpx.get(f"{service.url}/api/health", timeout=5).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.1)
            else:
                raise AssertionError("the service did not answer after the held connections closed")
        assert "refused a connection: 12 open" in service.log()


def test_downloads_nobody_reads_hold_no_database_connection(tmp_path: Path) -> None:
    """20 exports started and never read (SQLite's pool holds 15 connections): every other
    request is still answered, since no session stays open while an answer is sent."""
    with _service(tmp_path) as service:
        root = write_agent(tmp_path / "big")
        for index in range(3):
            (root / f"blob-{index}.bin").write_bytes(os.urandom(4 * 1024 * 1024))
        with service.admin as admin:
            big = admin.post("/api/seeds", files={"file": ("big.tgz", tar_of(root))}).json()["id"]
        with ExitStack() as stack:
            for _ in range(20):
                sock = stack.enter_context(_connect(service.url))
                sock.sendall(f"GET /api/agents/{big}/export HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            with service.anonymous as reader:
                for _ in range(5):
                    assert reader.get("/api/agents").status_code == 200
                    assert reader.get(f"/api/agents/{big}").status_code == 200


def test_blank_lines_between_requests_do_not_keep_a_connection(tmp_path: Path) -> None:
    """Empty lines before a request line start no request (the parser skips them), yet each used to
    put off the kept-alive connection's idle timer: the header deadline now runs from them."""
    with _service(tmp_path, CLADE_HEADER_TIMEOUT_S="1", CLADE_KEEP_ALIVE_TIMEOUT_S="1") as service:
        with _connect(service.url) as kept:
            kept.sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\n\r\n")
            kept.settimeout(30)
            assert kept.recv(4096).startswith(b"HTTP/1.1 200")
            assert _closed_by_server(kept, 60, trickle=b"\r\n")
        with _connect(service.url) as fresh:  # and from the connection's start, as before
            assert _closed_by_server(fresh, 60, trickle=b"\r\n")
        # A client that sends its next request in time is served on the same connection.
        with httpx.Client(base_url=service.url, timeout=30) as client:
            answers = [client.get("/api/health") for _ in range(3)]
        assert [a.status_code for a in answers] == [200, 200, 200]
