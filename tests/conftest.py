"""Fixtures shared by the whole suite: databases, the service (in this process or live), Docker."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
from docker.errors import DockerException

from service.db.migrate import upgrade
from tests.helpers import import_seed, small_tmpfs
from tests.images import required_base_image
from tests.servers import (
    AppService,
    ServiceProcess,
    SharedPostgres,
    app_service,
    free_port,
    fresh_postgres_database,
    service_env,
    shared_postgres_database,
    start_service,
)


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty SQLite database at the newest schema, copied for each test that takes one."""
    path = tmp_path_factory.mktemp("migrated") / "clade.db"
    upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture(scope="session")
def shared_postgres() -> Iterator[SharedPostgres | None]:
    with shared_postgres_database() as shared:
        yield shared


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Each test that takes this runs once on SQLite and once on Postgres, on an empty, migrated database."""
    if request.param == "sqlite":
        path = tmp_path / "clade.db"
        shutil.copyfile(request.getfixturevalue("migrated_sqlite"), path)
        yield f"sqlite:///{path}"
        return
    shared: SharedPostgres | None = request.getfixturevalue("shared_postgres")
    if shared is None:
        with fresh_postgres_database() as url:
            yield url
    else:
        shared.empty()
        yield shared.url


@pytest.fixture
def service(tmp_path: Path, database_url: str) -> Iterator[AppService]:
    """The service's app in this process, on each database: for what the API does."""
    with app_service(service_env(tmp_path / "data", database_url, free_port())) as app:
        yield app


@pytest.fixture
def live_service(tmp_path: Path, database_url: str) -> Iterator[ServiceProcess]:
    """A real `clade serve` process: for what only a process shows (a kill, a CLI talking HTTP)."""
    process = start_service(service_env(tmp_path / "data", database_url, 0))
    yield process
    process.stop()


@pytest.fixture
def seed_id(service: AppService, tmp_path: Path) -> str:
    return import_seed(service, tmp_path)


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
    """Built before the tests (scripts/test-images.sh), with its agent runtime; checked once per
    session, and a test fails at once, naming that command, if it is missing."""
    del docker_client  # the engine answers: a clear failure before this one
    return required_base_image()


# Session or module fixtures that take long to make (gradings, image sets, a recorded archive):
# under pytest-xdist (`--dist loadgroup`) the tests taking one run in the same process, so it is
# made once, not once per process. Tests on the same parametrised fixture are grouped per value.
EXPENSIVE_FIXTURES = ("checks", "fixture_set", "datasets", "archive")
# The longest tests (minutes each) join the groups of three of those fixtures: loadgroup hands out
# the largest groups first, so these start at once on different processes, never one queued
# behind another (a process is given more work while its current test runs).
LONG_TESTS = {
    "tests/e2e/test_evolution.py::test_generations_follow_the_script": "archive",
    "tests/e2e/test_demo.py::test_demo_serves_until_ctrl_c_and_its_last_commands_work": "fixture_set",
    "tests/e2e/test_evolution.py::test_worker_killed_mid_task_completes_the_step_once": "checks-local",
}


# A test that takes one of these (directly or through another fixture), or any test under
# tests/e2e/ (a whole Clade, with workers and their sandboxes), needs the Docker engine: it is
# marked `docker`, so `pytest -m "not docker"` runs the rest on a machine without one.
DOCKER_FIXTURES = frozenset({"docker_client", "base_image", "docker_backend", "cluster_factory"})
E2E_TESTS = Path(__file__).parent / "e2e"
# The real-model tier (tests/real_model/): a real llama-server and whole clusters with sandboxes. Its
# tests share one process (one server for the session) and need the engine too.
REAL_MODEL_TESTS = Path(__file__).parent / "real_model"


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups into node ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if DOCKER_FIXTURES.intersection(getattr(item, "fixturenames", ())) or item.path.is_relative_to(
            E2E_TESTS
        ):
            item.add_marker(pytest.mark.docker)
        if item.path.is_relative_to(REAL_MODEL_TESTS):
            item.add_marker(pytest.mark.real_model)
            item.add_marker(pytest.mark.docker)
            item.add_marker(pytest.mark.xdist_group("real-model"))
            continue
        if item.nodeid in LONG_TESTS:
            item.add_marker(pytest.mark.xdist_group(LONG_TESTS[item.nodeid]))
            continue
        used = [name for name in EXPENSIVE_FIXTURES if name in getattr(item, "fixturenames", ())]
        if not used:
            continue
        params = getattr(getattr(item, "callspec", None), "params", {})
        group = "-".join([used[0], *(str(params[name]) for name in ("grader",) if name in params)])
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MiB tmpfs mounted for the test (root needed, as in CI; without, it errors, never skips)."""
    with small_tmpfs(tmp_path / "small-disk", size_mb=16) as mount:
        yield mount


@pytest.fixture
def small_disk_service(small_disk: Path) -> Iterator[AppService]:
    """The service with everything it writes on the small disk (archive, SQLite, file broker) and
    its run driver on, ticking every 50 ms."""
    data_dir = small_disk / "data"
    env = service_env(
        data_dir,
        f"sqlite:///{data_dir / 'clade.db'}",
        free_port(),
        CLADE_RUN_DRIVER_ENABLED="true",
        CLADE_DRIVER_INTERVAL_S="0.05",
        CLADE_DRIVER_MAX_BACKOFF_S="0.2",
    )
    with app_service(env) as app:
        yield app
