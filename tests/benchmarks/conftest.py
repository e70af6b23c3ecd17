"""Grading backends for the benchmark tests: the local test double, and real Docker.

Every grading test runs once per backend. The Docker one builds (once per machine)
and uses the real base image; like the sandbox suite, it fails rather than skips
when the engine is unreachable: a host that cannot run sandboxes cannot run Clade.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import docker
import pytest
from docker.errors import DockerException

from benchmarks import GradeReport, Task
from benchmarks.clade_mini import CladeMini
from sandbox.base import SandboxBackend
from sandbox.registry import get_backend
from tests.benchmarks.local_backend import IMAGE as LOCAL_IMAGE
from tests.benchmarks.local_backend import LocalBackend
from tests.images import required_base_image


@dataclass
class Grader:
    """One backend and its image, with the benchmark under test."""

    backend: SandboxBackend
    image: str
    benchmark: CladeMini

    def grade(self, task: Task, diff: str, timeout_s: float = 60) -> GradeReport:
        return self.benchmark.grade(task, diff, self.backend, self.image, timeout_s)


@pytest.fixture(scope="session")
def clade_mini() -> CladeMini:
    return CladeMini()


@pytest.fixture(scope="session")
def docker_backend() -> Iterator[tuple[SandboxBackend, str]]:
    try:
        client = docker.from_env()
        client.ping()
    except (DockerException, OSError) as exc:
        pytest.fail(f"Docker engine unreachable ({exc}); start it with .ci/docker.sh")
    owner = f"test-benchmarks-{uuid.uuid4().hex[:8]}"
    backend = get_backend("docker", owner=owner)
    yield backend, required_base_image()
    backend.remove_orphans(owner)
    client.close()


@pytest.fixture(scope="session", params=["local", pytest.param("docker", marks=pytest.mark.docker)])
def grader(request: pytest.FixtureRequest, clade_mini: CladeMini) -> Grader:
    if request.param == "local":
        return Grader(LocalBackend(), LOCAL_IMAGE, clade_mini)
    backend, image = request.getfixturevalue("docker_backend")
    return Grader(backend, image, clade_mini)
