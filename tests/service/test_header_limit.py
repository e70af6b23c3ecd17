"""Request headers are bounded (service.api.connections.MAX_HEADER_BYTES), against a real
`clade serve`: past 64 KiB the answer is a 431 and the connection is closed, whatever the headers
look like (one long line, many short ones), and nothing of them is kept."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import httpx
import pytest

from service.api.connections import MAX_HEADER_BYTES
from tests.servers import ServiceProcess, service_env, start_service


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    where = tmp_path_factory.mktemp("header-limit")
    service = start_service(service_env(where / "data", f"sqlite:///{where / 'c.db'}", 0))
    yield service
    service.stop()


def _exchange(service: ServiceProcess, request: bytes) -> bytes:
    """What the server answers to `request`, read until it closes the connection or 30 s pass."""
    host, port = service.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
            if b"\r\n\r\n" in answer and b"connection: close" not in answer.lower():
                break  # a kept-alive answer: its head is all we look at
        return answer


def _request(size: int, *, header_lines: int = 1) -> bytes:
    """A GET /api/health whose request line and headers come to exactly `size` bytes, spread over
    `header_lines` headers besides Host."""
    head = b"GET /api/health HTTP/1.1\r\nHost: x\r\n"
    end = b"\r\n"
    filler = size - len(head) - len(end)
    lines = []
    for index in range(header_lines):
        name = b"X-F%d: " % index
        share = filler // header_lines + (filler % header_lines if index == 0 else 0)
        lines.append(name + b"a" * (share - len(name) - 2) + b"\r\n")
    request = head + b"".join(lines) + end
    assert len(request) == size
    return request


def test_headers_up_to_the_limit_are_served(live: ServiceProcess) -> None:
    assert _exchange(live, _request(MAX_HEADER_BYTES)).startswith(b"HTTP/1.1 200")
    assert _exchange(live, _request(MAX_HEADER_BYTES, header_lines=2000)).startswith(b"HTTP/1.1 200")


@pytest.mark.parametrize("header_lines", [1, 5000], ids=["one long header", "many headers"])
def test_headers_past_the_limit_are_431(live: ServiceProcess, header_lines: int) -> None:
    answer = _exchange(live, _request(MAX_HEADER_BYTES + 1, header_lines=header_lines))
    assert answer.startswith(b"HTTP/1.1 431"), answer[:200]
    assert answer.endswith(b"request line and headers over 65536 bytes")
    assert "refused a request whose headers are over 65536 bytes" in live.log()
    assert httpx.get(f"{live.url}/api/health", timeout=30).status_code == 200


def test_a_header_streamed_on_and_on_is_cut_off(live: ServiceProcess) -> None:
    """The probe's 20 MB header line was read to its end (and its 300 MB one held in memory): now
    the server closes the connection long before, having read no more than the limit."""
    host, port = live.url.removeprefix("http://").split(":")
    sent = 0
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\nX-Big: ")
        with pytest.raises((ConnectionResetError, BrokenPipeError)):
            while sent < 64 * 2**20:
                sock.sendall(b"a" * 2**16)
                sent += 2**16
    assert sent < 16 * 2**20  # what the kernel buffers took before the reset, no more


def test_a_body_longer_than_the_header_limit_is_still_read(live: ServiceProcess) -> None:
    body = json.dumps({"name": "big", "seed_agent": "0" * 40}).encode() + b" " * (2 * MAX_HEADER_BYTES)
    headers = {"Authorization": f"Bearer {live.secrets['admin_token']}", "Content-Type": "application/json"}
    answer = httpx.post(f"{live.url}/api/runs/plan", content=body, headers=headers, timeout=30)
    assert answer.status_code == 422, answer.text  # the body was read and judged, not cut off
