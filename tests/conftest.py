"""Fixtures shared by the whole suite: databases, live service processes, small agents."""

from __future__ import annotations

import io
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
from docker.errors import DockerException

from sandbox.images.build import ensure_base_image
from tests.servers import ServiceProcess, free_port, fresh_postgres_database, service_env, start_service

AGENT_TOML = 'name = "tiny"\nsolve = "python -m tiny"\n'


def write_agent(root: Path, files: dict[str, str] | None = None) -> Path:
    """A minimal valid agent folder."""
    root.mkdir(parents=True, exist_ok=True)
    content = {"agent.toml": AGENT_TOML, "tiny/__init__.py": "", "tiny/__main__.py": "print('hi')\n"}
    for name, text in (content | (files or {})).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def tar_of(root: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(root, arcname=".")
    return buffer.getvalue()


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Each test that takes this runs once on SQLite and once on a fresh Postgres database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'clade.db'}"
    else:
        with fresh_postgres_database() as url:
            yield url


@pytest.fixture
def service(tmp_path: Path, database_url: str) -> Iterator[ServiceProcess]:
    env = service_env(tmp_path / "data", database_url, free_port())
    process = start_service(env)
    yield process
    process.stop()


@pytest.fixture
def seed_id(service: ServiceProcess, tmp_path: Path) -> str:
    root = write_agent(tmp_path / "seed-src", {"tiny/core.py": "".join(f"line {i}\n" for i in range(50))})
    with service.admin as client:
        response = client.post("/api/seeds", files={"file": ("a.tgz", tar_of(root))}, data={"name": "tiny"})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def tar_names(data: bytes) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return tar.getnames()


@pytest.fixture(scope="session")
def docker_client() -> Iterator[Any]:
    """The Docker engine; its absence fails the tests that need it (never a skip)."""
    try:
        client = docker.from_env()
        client.ping()
    except (DockerException, OSError) as exc:
        pytest.fail(f"Docker engine unreachable ({exc}); start it with .ci/docker.sh", pytrace=False)
    yield client
    client.close()


@pytest.fixture(scope="session")
def base_image(docker_client: Any) -> str:
    """Built once per machine (cached in ~/.cache/clade/images), checked once per session."""
    return ensure_base_image(
        docker_client, progress=lambda line: print(f"[images] {line}", file=sys.stderr, flush=True)
    )
