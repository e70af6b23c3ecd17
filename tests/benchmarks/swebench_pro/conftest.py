"""Fixtures: the SWE-bench Pro fixture set (repositories, rows, images) and the benchmark.

The Docker ones build on `docker_backend` (tests/benchmarks/conftest.py), which fails,
rather than skips, when the engine is unreachable; the instance images sit on the Polyglot
toolchain image, which scripts/test-images.sh builds before the tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import pytest

from benchmarks.swebench_pro import SWEbenchPro, SWEbenchProOptions
from sandbox.base import SandboxBackend
from sandbox.docker_images import DockerImages
from tests.benchmarks.swebench_pro.fixture_set import (
    IMAGE_REPOSITORY,
    RUN_SCRIPTS,
    Repo,
    build_images,
    repositories,
    rows,
    write_jsonl,
)
from tests.images import required_polyglot_image

# The fixture repositories' own tests run only inside their instance images.
collect_ignore = ["fixtures"]


@dataclass(frozen=True)
class ProSet:
    repos: dict[str, Repo]
    images: dict[str, str]  # fixture name -> instance image
    dataset: Path


@pytest.fixture(scope="session")
def pro_repos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Repo]:
    return repositories(tmp_path_factory.mktemp("pro-repos"))


@pytest.fixture(scope="session")
def pro_offline_dataset(tmp_path_factory: pytest.TempPathFactory, pro_repos: dict[str, Repo]) -> Path:
    """The fixture rows with images never built (for loading only)."""
    return write_jsonl(rows(pro_repos), tmp_path_factory.mktemp("pro-offline") / "rows.jsonl")


@pytest.fixture(scope="session")
def pro_client(docker_backend: tuple[SandboxBackend, str]) -> Iterator[Any]:
    client = docker.from_env()
    yield client
    client.close()


@pytest.fixture(scope="session")
def pro_set(
    tmp_path_factory: pytest.TempPathFactory,
    docker_backend: tuple[SandboxBackend, str],
    pro_client: Any,
    pro_repos: dict[str, Repo],
) -> ProSet:
    backend, _ = docker_backend
    toolchain = required_polyglot_image(backend.images)
    images = build_images(pro_client, toolchain, pro_repos)
    dataset = write_jsonl(rows(pro_repos, images), tmp_path_factory.mktemp("pro-rows") / "rows.jsonl")
    return ProSet(repos=pro_repos, images=images, dataset=dataset)


@pytest.fixture(scope="session")
def pro_bench(pro_set: ProSet, pro_client: Any) -> SWEbenchPro:
    options = SWEbenchProOptions(
        dataset=str(pro_set.dataset), scripts=str(RUN_SCRIPTS), image_repository=IMAGE_REPOSITORY
    )
    return SWEbenchPro(options, images=DockerImages(pro_client))


@pytest.fixture(scope="session")
def backend(docker_backend: tuple[SandboxBackend, str]) -> SandboxBackend:
    return docker_backend[0]
