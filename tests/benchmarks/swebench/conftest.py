"""Fixtures: the SWE-bench fixture set (repositories, instance files, images) and the benchmark.

The Docker ones build on `docker_backend` (tests/benchmarks/conftest.py), which fails,
rather than skips, when the engine is unreachable.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import pytest

from benchmarks.swebench import Harness, SWEbench, SWEbenchOptions, load_harness
from sandbox.base import SandboxBackend
from sandbox.docker_images import DockerImages
from tests.benchmarks.swebench.fixture_set import build_images, instance_rows, repositories, write_jsonl
from tests.benchmarks.swebench.runner_fixtures import RUNNER_NAMES, RUNNER_REPOS, runner_rows


@dataclass(frozen=True)
class Repos:
    paths: dict[str, Path]
    commits: dict[str, str]


@dataclass(frozen=True)
class FixtureSet:
    images: dict[str, str]  # repository name -> instance image
    datasets: dict[str, Path]  # instance format -> JSONL file
    rows: dict[str, dict[str, Any]]  # instance id -> row, in the installed harness's format


@pytest.fixture(scope="session")
def harness() -> Harness:
    return load_harness()


@pytest.fixture(scope="session")
def repos(tmp_path_factory: pytest.TempPathFactory) -> Repos:
    built = repositories(tmp_path_factory.mktemp("swebench-repos"))
    return Repos(
        paths={name: path for name, (path, _) in built.items()},
        commits={name: commit for name, (_, commit) in built.items()},
    )


@pytest.fixture(scope="session")
def offline_dataset(tmp_path_factory: pytest.TempPathFactory, repos: Repos, harness: Harness) -> Path:
    """The fixture instances in the installed harness's format, with images never built."""
    rows = instance_rows(harness.instance_format, repos.commits)
    return write_jsonl(rows, tmp_path_factory.mktemp("swebench-offline") / "instances.jsonl")


@pytest.fixture(scope="session")
def offline_rows(offline_dataset: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in offline_dataset.read_text().splitlines()]


@pytest.fixture(scope="session")
def docker_client(docker_backend: tuple[SandboxBackend, str]) -> Iterator[Any]:
    client = docker.from_env()
    yield client
    client.close()


@pytest.fixture(scope="session")
def fixture_set(
    tmp_path_factory: pytest.TempPathFactory,
    docker_backend: tuple[SandboxBackend, str],
    docker_client: Any,
    repos: Repos,
    harness: Harness,
) -> FixtureSet:
    _, base_image = docker_backend
    images = build_images(
        docker_client, base_image, {name: (repos.paths[name], repos.commits[name]) for name in repos.paths}
    )
    folder = tmp_path_factory.mktemp("swebench-datasets")
    datasets = {
        fmt: write_jsonl(instance_rows(fmt, repos.commits, images), folder / f"{fmt}.jsonl")
        for fmt in ("swebench-5", "swebench-4")
    }
    rows = instance_rows(harness.instance_format, repos.commits, images)
    return FixtureSet(images=images, datasets=datasets, rows={row["instance_id"]: row for row in rows})


@pytest.fixture(scope="session")
def bench(fixture_set: FixtureSet, docker_client: Any, harness: Harness) -> SWEbench:
    options = SWEbenchOptions(dataset=str(fixture_set.datasets[harness.instance_format]))
    return SWEbench(options, images=DockerImages(docker_client), harness=harness)


@pytest.fixture(scope="session")
def backend(docker_backend: tuple[SandboxBackend, str]) -> SandboxBackend:
    return docker_backend[0]


@pytest.fixture(scope="session")
def runner_bench(
    tmp_path_factory: pytest.TempPathFactory,
    docker_backend: tuple[SandboxBackend, str],
    docker_client: Any,
    harness: Harness,
) -> SWEbench:
    """The Django- and sympy-layout instances (`runner_fixtures.py`), their images built here."""
    if harness.instance_format != "swebench-5":
        pytest.fail(
            f"the runner fixture instances are swebench 5.x rows; swebench {harness.version} is installed"
        )
    _, base_image = docker_backend
    built = repositories(tmp_path_factory.mktemp("swebench-runner-repos"), RUNNER_REPOS)
    images = build_images(docker_client, base_image, built, RUNNER_NAMES)
    commits = {name: commit for name, (_, commit) in built.items()}
    dataset = write_jsonl(
        runner_rows(commits, images), tmp_path_factory.mktemp("swebench-runners") / "rows.jsonl"
    )
    return SWEbench(
        SWEbenchOptions(dataset=str(dataset)), images=DockerImages(docker_client), harness=harness
    )
