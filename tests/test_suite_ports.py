"""Servers the tests start never lose their port to another process: the service takes a socket
bound before it starts; servers that cannot (Redis, Postgres, Flower) move to another free port
when the one picked was taken before they bound it, and a test never talks to another's server."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

import tests.e2e.stores as stores
import tests.servers as servers
from tests.e2e.stores import LocalRedis
from tests.servers import on_a_free_port, service_env, start_service


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port another process's server listens on (it accepts, and never answers)."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        yield int(other.getsockname()[1])


def picks_first(port: int) -> Callable[[], int]:
    """A `free_port` whose first pick is `port` (taken meanwhile, as on a busy machine)."""
    real = servers.free_port
    picks = iter([port])
    return lambda: next(picks, None) or real()


def test_a_service_on_port_0_reports_the_port_it_got_and_keeps_it_on_restart(tmp_path: Path) -> None:
    service = start_service(service_env(tmp_path / "data", f"sqlite:///{tmp_path / 'c.db'}", 0))
    try:
        assert not service.url.endswith(":0") and service.env["CLADE_SERVICE_URL"] == service.url
        assert httpx.get(f"{service.url}/api/health", timeout=30).status_code == 200
    finally:
        service.stop()
    again = start_service(service.env)
    try:
        assert again.url == service.url
        assert httpx.get(f"{again.url}/api/health", timeout=30).status_code == 200
    finally:
        again.stop()


def test_redis_moves_to_another_port_when_the_picked_one_was_taken(
    tmp_path: Path, taken_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stores, "free_port", picks_first(taken_port))
    store = LocalRedis(tmp_path / "redis")
    store.start()
    try:
        assert store.port not in (0, taken_port)
        store.restart()  # clients hold its URL: a restart keeps the port
        assert store.url == f"redis://127.0.0.1:{store.port}/0"
    finally:
        store.stop()


def test_a_server_that_cannot_report_its_port_moves_when_it_finds_it_taken(
    tmp_path: Path, taken_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(servers, "free_port", picks_first(taken_port))
    tried: list[int] = []

    def start(port: int) -> subprocess.Popen[bytes]:
        tried.append(port)
        argv = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"]
        return subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def answers(port: int) -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/", timeout=2).status_code == 200
        except httpx.TransportError:  # the other server on the taken port never answers
            return False

    process, port = on_a_free_port(start, answers, "http.server")
    try:
        assert tried[0] == taken_port and port == tried[-1] != taken_port
    finally:
        process.terminate()
        process.wait(timeout=30)
