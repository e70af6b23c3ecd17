"""A run driver that no exception can stop: failures are logged, recorded on the runs, backed off.

The database is really broken (a table renamed away, as a botched migration or a damaged
database would leave it) and really mended; the service's own thread drives the run and
`/api/health` reports it, on SQLite and on Postgres.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr
from sqlalchemy import create_engine, select, text

from contracts.jobs import JOB_SECRET_HEADER
from contracts.settings import Settings
from service.api.app import create_app
from service.api.redact import HIDDEN_ERROR
from service.db.models import Event, Run
from service.driver.loop import RunDriver
from tests.helpers import import_seed
from tests.servers import AppService, app_service, free_port, service_env
from tests.service.driver_world import T, World
from tests.service.helpers import sent_job


def driver_errors(world: World, run_id: str) -> list[dict[str, Any]]:
    with world.sessions() as session:
        return [
            e.payload
            for e in session.scalars(
                select(Event).where(Event.run_id == run_id, Event.kind == "driver_error").order_by(Event.id)
            )
        ]


@contextmanager
def table_renamed(database_url: str, table: str) -> Iterator[None]:
    """The table is gone under its name until the block ends (the same SQL on SQLite and Postgres)."""
    engine = create_engine(database_url)
    with engine.begin() as conn:
        conn.execute(text(f"ALTER TABLE {table} RENAME TO {table}_away"))
    try:
        yield
    finally:
        with engine.begin() as conn:
            conn.execute(text(f"ALTER TABLE {table}_away RENAME TO {table}"))
        engine.dispose()


def test_a_failing_run_is_recorded_and_the_others_still_move(world: World) -> None:
    broken, healthy = world.start(stages=[{"tasks": T[:1]}]), world.start(stages=[{"tasks": T[1:2]}])
    with world.sessions.begin() as session:
        run = session.get(Run, broken)
        assert run is not None
        kept, run.stage_tasks = run.stage_tasks, [*run.stage_tasks, ["extra"]]  # a stage too many
    assert world.driver.run_once() is False
    _, evaluate = world.outbox.take()
    assert [(j.run_id, j.task_id) for j in evaluate] == [(healthy, T[1])]
    state = world.driver.state()
    assert state.consecutive_failures == 1 and state.last_success_at is None
    assert state.last_error is not None and state.last_error.startswith(f"run {broken}: ValueError")
    (event,) = driver_errors(world, broken)
    assert event["scope"] == "run" and event["error"].startswith("ValueError") and event["failed_ticks"] == 1
    assert driver_errors(world, healthy) == []

    with world.sessions.begin() as session:
        run = session.get(Run, broken)
        assert run is not None
        run.stage_tasks = kept
    assert world.driver.run_once() is True
    _, evaluate = world.outbox.take()
    assert [(j.run_id, j.task_id) for j in evaluate] == [(broken, T[0])]
    state = world.driver.state()
    assert (state.consecutive_failures, state.last_error) == (0, None) and state.last_success_at is not None


def test_failing_ticks_back_off_to_the_cap_and_are_recorded_once_the_database_is_back(
    world: World, tmp_path: Path
) -> None:
    driver = RunDriver(sessions=world.sessions, dispatcher=world.outbox, interval_s=0.1, max_backoff_s=1.0)
    run_id = world.start(stages=[{"tasks": T[:1]}])
    waits = []
    with table_renamed(f"sqlite:///{tmp_path / 'clade.db'}", "runs"):
        for _ in range(5):
            assert driver.run_once() is False
            waits.append(driver.state().retry_in_s)
        state = driver.state()
    assert waits == pytest.approx([0.2, 0.4, 0.8, 1.0, 1.0])  # doubles from the interval, up to the cap
    assert state.consecutive_failures == 5 and "no such table: runs" in str(state.last_error)
    assert driver_errors(world, run_id) == []  # the database could take nothing meanwhile

    assert driver.run_once() is True
    state = driver.state()
    assert (state.consecutive_failures, state.retry_in_s) == (0, 0.1)
    (event,) = driver_errors(world, run_id)  # once, not once per failed tick
    assert event["scope"] == "driver" and event["failed_ticks"] == 5
    assert "no such table: runs" in event["error"]
    _, evaluate = world.outbox.take()
    assert [j.task_id for j in evaluate] == [T[0]]  # and the run moves again
    driver.run_once()
    assert len(driver_errors(world, run_id)) == 1


def wait_for(check: Callable[[], Any], what: str, timeout_s: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


@pytest.fixture
def driven_service(tmp_path: Path, database_url: str) -> Iterator[AppService]:
    """The service with its run driver on, ticking fast and going stale after two seconds (a
    loaded machine may starve a tick or two)."""
    env = service_env(
        tmp_path / "data",
        database_url,
        free_port(),
        CLADE_RUN_DRIVER_ENABLED="true",
        CLADE_DRIVER_INTERVAL_S="0.05",
        CLADE_DRIVER_MAX_BACKOFF_S="0.2",
        CLADE_DRIVER_STALE_AFTER_S="2",
    )
    with app_service(env) as app:
        yield app


def test_health_while_the_database_is_broken_and_the_run_completes_once_mended(
    driven_service: AppService, tmp_path: Path
) -> None:
    service = driven_service
    seed = import_seed(service, tmp_path)
    config = {"seed_agent": seed, "stages": [{"tasks": T[:1]}], "budget": {"max_children": 0}}
    with service.admin as admin, service.worker as worker, service.anonymous as anonymous:
        run_id = admin.post("/api/runs", json=config).json()["id"]

        def evaluation_id() -> str | None:
            with service.admin as client:
                agent = client.get(f"/api/agents/{seed}").json()
            evaluations = [e for run in agent["runs"] for e in run["evaluations"]]
            return str(evaluations[0]["id"]) if evaluations else None

        pending = wait_for(evaluation_id, "the driver to create the seed's evaluation")
        # Healthy before the outage (a loaded machine may starve a tick past the 2 s for a moment).
        wait_for(lambda: anonymous.get("/api/health").status_code == 200, "health to be ok before the outage")

        with table_renamed(service.database_url, "runs"):

            def backed_off() -> httpx.Response | None:
                answer = anonymous.get("/api/health")
                failing = answer.json()["driver"]["consecutive_failures"] >= 3
                return answer if answer.status_code == 503 and failing else None

            body = wait_for(backed_off, "health to turn 503 after three failed ticks").json()
            assert body["status"] == "unhealthy" and "last successful tick" in body["problem"]
            driver = body["driver"]
            assert driver["retry_in_s"] == 0.2  # 0.05 s doubled at each failure, up to the 0.2 s cap
            # The error's text (SQL, table names) is for admins; anyone else reads that there is one.
            assert driver["last_error"] == HIDDEN_ERROR and "runs" not in body["problem"]
            assert driver["alive"] is True and driver["last_success_at"].endswith(("Z", "+00:00"))
            as_admin = admin.get("/api/health").json()["driver"]
            assert "runs" in as_admin["last_error"]

        healthy = wait_for(
            lambda: (r := anonymous.get("/api/health")).status_code == 200 and r, "health to be ok again"
        )
        assert healthy.json()["driver"]["consecutive_failures"] == 0
        job = wait_for(lambda: sent_job(service.data_dir, f"evaluate-{pending}"), "the evaluation's job")
        worker.headers[JOB_SECRET_HEADER] = job["secret"]
        answer = worker.post(
            f"/api/worker/evaluations/{pending}/result",
            json={"result": {"resolved": True}, "usage": []},
        )
        assert answer.status_code == 200, answer.text
        wait_for(
            lambda: admin.get(f"/api/runs/{run_id}").json()["status"] == "completed", "the run to complete"
        )
        events = admin.get(f"/api/runs/{run_id}/events").json()
    recorded = [e["payload"] for e in events if e["kind"] == "driver_error"]
    # Usually the listing of runs failed ("driver"); a rename between listing and moving fails the run.
    assert recorded and all(p["scope"] in ("driver", "run") and "runs" in p["error"] for p in recorded)


def test_health_says_unhealthy_when_the_driver_thread_is_gone(tmp_path: Path) -> None:
    placeholder = SecretStr("test-token")
    settings = Settings(
        data_dir=tmp_path,
        run_driver_enabled=True,
        admin_token=placeholder,
        worker_token=placeholder,
        read_token=placeholder,
    )
    app = create_app(settings)
    with TestClient(app) as client:
        ok = client.get("/api/health")
        assert ok.status_code == 200 and ok.json()["driver"]["alive"] is True
        app.state.driver.stop()
        gone = client.get("/api/health")
        schema = client.get("/openapi.json").json()["paths"]["/api/health"]["get"]["responses"]
    assert gone.status_code == 503
    assert gone.json()["problem"] == "the run driver's thread is not running"
    assert schema["200"]["content"] == schema["503"]["content"]  # both documented, one typed body
