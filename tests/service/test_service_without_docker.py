"""The service never talks to a sandbox engine: it validates and creates a Polyglot run in
compiled languages (whose toolchain image only workers have) with DOCKER_HOST pointing at a
socket that this test listens on, and nothing connects to it. The toolchains are looked for
on the worker (tests/worker/test_infrastructure_failure.py)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import import_seed
from tests.servers import ServiceProcess, free_port, service_env, start_service
from tests.service.helpers import config

TOOLCHAINS = Path(__file__).parents[1] / "benchmarks" / "polyglot" / "toolchains"


@pytest.fixture
def listener(tmp_path: Path) -> Iterator[socket.socket]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(tmp_path / "docker.sock"))
    sock.listen(8)
    sock.setblocking(False)
    yield sock
    sock.close()


@pytest.fixture
def service(tmp_path: Path, listener: socket.socket) -> Iterator[ServiceProcess]:
    data = tmp_path / "data"
    env = service_env(
        data,
        f"sqlite:///{tmp_path / 'clade.db'}",
        free_port(),
        DOCKER_HOST=f"unix://{tmp_path / 'docker.sock'}",
    )
    process = start_service(env)
    yield process
    process.stop()


def test_a_polyglot_run_is_validated_and_created_without_docker(
    service: ServiceProcess, listener: socket.socket, tmp_path: Path
) -> None:
    seed = import_seed(service, tmp_path)
    benchmark = {"name": "polyglot", "options": {"root": str(TOOLCHAINS), "languages": ["go", "rust"]}}
    with service.admin as client:
        created = client.post("/api/runs", json=config(seed, benchmark=benchmark, stages=[{"subset": "all"}]))
        assert created.status_code == 201, created.text
        assert created.json()["status"] == "running"
        # Bad options are still refused at once, naming the field.
        wrong = {"name": "polyglot", "options": {"root": str(TOOLCHAINS), "languages": ["cobol"]}}
        refused = client.post("/api/runs", json=config(seed, name="wrong", benchmark=wrong))
        assert refused.status_code == 422, refused.text
        assert ["body", "benchmark", "options", "languages", 0] in [
            e["loc"] for e in refused.json()["detail"]
        ]
    with pytest.raises(BlockingIOError):
        listener.accept()  # no process connected to the "Docker" socket
