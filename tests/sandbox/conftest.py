"""Fixtures for the sandbox suite: a real Docker engine, the real base image, every backend.

No mocks. A missing engine fails these tests instead of skipping them: a host that
cannot run sandboxes cannot run Clade.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from sandbox.base import Sandbox, SandboxBackend, SandboxSpec
from sandbox.registry import backend_names, get_backend

SpecFactory = Callable[..., SandboxSpec]


@pytest.fixture(scope="session")
def backend_images(base_image: str) -> dict[str, str]:
    """The image each registered backend runs sandboxes from: its own base image (Docker's is
    the session's); an installed backend joins every contract test below."""
    images = {"docker": base_image}
    for name in backend_names():
        if name not in images:
            images[name] = get_backend(name, owner="test-images").images.base()
    return images


@pytest.fixture(params=backend_names())
def backend_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def owner() -> str:
    return f"test-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def backend(backend_name: str, owner: str, docker_client: Any) -> Iterator[SandboxBackend]:
    instance = get_backend(backend_name, owner=owner)
    yield instance
    instance.remove_orphans(owner)


@pytest.fixture
def make_spec(backend_name: str, backend_images: dict[str, str]) -> SpecFactory:
    """SandboxSpec with small limits; keyword arguments override."""
    image = backend_images[backend_name]

    def make(**overrides: Any) -> SandboxSpec:
        fields: dict[str, Any] = {
            "image": image,
            "memory_mb": 256,
            "cpus": 1.0,
            "pids": 128,
            "tmpfs_mb": 64,
            "output_cap_bytes": 1_000_000,
        }
        return SandboxSpec(**(fields | overrides))

    return make


@pytest.fixture
def sandbox(backend: SandboxBackend, make_spec: SpecFactory) -> Iterator[Sandbox]:
    started = backend.start(make_spec())
    yield started
    started.close()


def run_ok(sandbox: Sandbox, *command: str, timeout_s: float = 30) -> str:
    """stdout of a command that must succeed."""
    result = sandbox.exec(list(command), timeout_s=timeout_s)
    assert result.exit_code == 0, result
    return result.stdout


def assert_healthy(sandbox: Sandbox) -> None:
    """The sandbox still runs commands after an attack."""
    assert run_ok(sandbox, "echo", "still-alive") == "still-alive\n"
    sandbox.write_file("/tmp/health-check", b"ok")
    assert sandbox.read_file("/tmp/health-check") == b"ok"


def leftover_processes(sandbox: Sandbox) -> list[str]:
    """Processes besides the container's init, its keeper and the `ps` itself."""
    listing = run_ok(sandbox, "ps", "-eo", "pid=,ppid=,args=")
    rows = [line.split(None, 2) for line in listing.splitlines() if line.strip()]
    keeper = {pid for pid, _ppid, args in rows if "clade-keeper" in args}
    return [
        args
        for pid, ppid, args in rows
        if pid != "1" and pid not in keeper and ppid not in keeper and not args.startswith("ps ")
    ]
