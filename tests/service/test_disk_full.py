"""A full disk: 507 with a clear message, nothing half-written, and back to work once space is freed.

The service's data directory (archive, SQLite database, file broker) is on a 16 MiB tmpfs
of its own, filled to the last byte with a ballast file, then freed; no restart between.
"""

from __future__ import annotations

import errno
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy import create_engine, select
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from contracts.errors import StorageFullError
from contracts.jobs import JOB_SECRET_HEADER
from service.archive.git_store import GitStore
from service.archive.storage import full_disk_refused, is_disk_full
from service.db.models import Evaluation, Event, Step
from tests.helpers import fill_disk, import_seed, tar_of, write_agent
from tests.servers import AppService
from tests.service.driver_world import T, World
from tests.service.helpers import (
    agent_ids,
    agent_refs,
    core_patch,
    open_step_in,
    row_counts,
    sent_job,
    start_run,
)

FULL = "the archive's disk is full: "


def wait_for(check: Callable[[], Any], what: str, timeout_s: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def pending_step(database_url: str, run_id: str) -> str | None:
    engine = create_engine(database_url)
    with Session(engine) as session:
        step = session.scalars(select(Step).where(Step.run_id == run_id, Step.dispatches > 0)).first()
        step_id = step.id if step is not None and step.child_id is None else None
    engine.dispose()
    return step_id


def evaluations(database_url: str) -> set[tuple[str, str]]:
    """(run, agent) of every evaluation the driver created."""
    engine = create_engine(database_url)
    with Session(engine) as session:
        pairs = {(e.run_id, e.agent_id) for e in session.scalars(select(Evaluation))}
    engine.dispose()
    return pairs


def test_a_full_disk_is_507_writes_nothing_and_passes_once_space_is_freed(
    small_disk_service: AppService, small_disk: Path, tmp_path: Path
) -> None:
    service, data_dir = small_disk_service, small_disk_service.data_dir
    db = service.database_url
    seed = import_seed(service, tmp_path)
    config = {"seed_agent": seed, "stages": [{"tasks": T[:1]}], "budget": {"max_children": 1}}
    other_seed = tar_of(write_agent(tmp_path / "other", {"other.py": "x = 1\n"}))
    patch = {"patch": core_patch(10, "changed"), "diagnosis": "d"}
    with service.admin as admin, service.worker as worker:
        run_id = admin.post("/api/runs", json=config).json()["id"]
        wait_for(lambda: evaluations(db), "the seed's evaluation")
        first = admin.get(f"/api/agents/{seed}").json()["runs"][0]["evaluations"][0]["id"]
        answer = {"result": {"resolved": True}, "usage": []}
        job = wait_for(lambda: sent_job(data_dir, f"evaluate-{first}"), "the evaluation's job")
        with service.client("worker_token", job_secret=job["secret"]) as evaluator:
            assert evaluator.post(f"/api/worker/evaluations/{first}/result", json=answer).status_code == 200
        step_id = wait_for(lambda: pending_step(db, run_id), "the seed's first step to be sent")
        improve = wait_for(lambda: sent_job(data_dir, f"improve-{step_id}"), "the step's job")
        worker.headers[JOB_SECRET_HEADER] = improve["secret"]  # the improver of this step
        before = (agent_ids(db), agent_refs(data_dir), row_counts(db))

        fill_disk(small_disk / "ballast")
        refused = [
            admin.post("/api/seeds", files={"file": ("a.tgz", other_seed)}, data={"name": "other"}),
            worker.post(f"/api/worker/steps/{step_id}/child", json=patch),
            admin.post("/api/runs", json=config),  # the database alone refuses this one
        ]
        for response in refused:
            assert response.status_code == 507, response.text
            detail = response.json()["detail"]
            assert detail.startswith(FULL) and detail.endswith(f"; free space in {data_dir}"), detail
        assert "patch does not apply" not in refused[1].text
        assert (agent_ids(db), agent_refs(data_dir), row_counts(db)) == before  # nothing half-written
        assert pending_step(db, run_id) == step_id
        report = admin.get("/api/admin/consistency").json()
        assert report["refs_restored"] == report["refs_removed"] == report["missing_commits"] == []

        (small_disk / "ballast").unlink()
        created = admin.post("/api/seeds", files={"file": ("a.tgz", other_seed)}, data={"name": "other"})
        assert created.status_code == 201, created.text
        child = worker.post(f"/api/worker/steps/{step_id}/child", json=patch)
        assert child.status_code == 200, child.text
        new_run = admin.post("/api/runs", json=config)
        assert new_run.status_code == 201, new_run.text
        assert agent_ids(db) == agent_refs(data_dir) == before[0] | {created.json()["id"], child.json()["id"]}
        # The driver carries on by itself: the child and the new run are evaluated.
        expected = {(run_id, child.json()["id"]), (new_run.json()["id"], seed)}
        wait_for(lambda: expected <= evaluations(db), "the driver to evaluate the child and the new run")
        health = admin.get("/api/health")
        paths = admin.get("/openapi.json").json()["paths"]
    assert health.status_code == 200 and health.json()["driver"]["consecutive_failures"] == 0
    for path in ("/api/seeds", "/api/worker/steps/{step_id}/child"):
        assert "507" in paths[path]["post"]["responses"], path


def test_a_ref_git_cannot_write_for_want_of_space_is_storage_full(small_disk: Path, tmp_path: Path) -> None:
    """git names no cause when a ref's lock file cannot be written; the disk it is on does."""
    git = GitStore(small_disk / "archive.git")
    sha = git.commit_folder(write_agent(tmp_path / "agent"))
    fill_disk(small_disk / "ballast")
    with pytest.raises(StorageFullError, match=f"^{FULL}.*; free space in {small_disk}$"):
        git.set_agent_ref(sha)
    assert git.agent_refs() == set()
    (small_disk / "ballast").unlink()
    git.ensure_agent_ref(sha)
    assert git.agent_refs() == {sha}


def test_a_child_delivered_again_restores_a_ref_the_first_delivery_did_not_write(
    service: AppService, seed_id: str
) -> None:
    """Should the disk fill between the transaction and the ref, the worker's retry completes the child."""
    run_id = start_run(service, seed_id)
    step_id = open_step_in(service.database_url, run_id=run_id, parent_id=seed_id)
    body = {"patch": core_patch(3, "new")}
    with service.worker as worker:
        child = worker.post(f"/api/worker/steps/{step_id}/child", json=body).json()["id"]
        # As a 507 after the commit would leave it: the row, and no ref.
        GitStore(service.data_dir / "archive.git").delete_agent_ref(child)
        again = worker.post(f"/api/worker/steps/{step_id}/child", json=body)
    assert again.status_code == 200 and again.json()["id"] == child
    assert agent_refs(service.data_dir) == agent_ids(service.database_url) == {seed_id, child}


@pytest.mark.parametrize(
    "error",
    [
        OSError(errno.ENOSPC, "No space left on device"),
        OSError(errno.EDQUOT, "Disk quota exceeded"),
        # As SQLAlchemy raises what psycopg raised (SQLite's own is met for real above).
        OperationalError("INSERT", {}, psycopg.errors.DiskFull("could not extend file")),
    ],
    ids=["ENOSPC", "EDQUOT", "postgres-53100"],
)
def test_each_layer_saying_disk_full_is_recognised(error: Exception, tmp_path: Path) -> None:
    def write() -> None:
        try:
            raise error
        except Exception as exc:  # as SQLAlchemy and our callers wrap what the layer raised
            raise RuntimeError("wrapped") from exc

    assert is_disk_full(error)
    where = "on the database server" if isinstance(error, OperationalError) else f"in {tmp_path}"
    refused = pytest.raises(StorageFullError, match=f"^{FULL}.*; free space {where}$")
    with refused, full_disk_refused(tmp_path):
        raise error
    with pytest.raises(RuntimeError) as wrapped:
        write()
    assert is_disk_full(wrapped.value)
    assert not is_disk_full(OSError(errno.EACCES, "Permission denied"))


def test_the_driver_outlives_a_full_disk_and_records_it_once_space_is_back(small_disk: Path) -> None:
    world = World(small_disk)
    run_id = world.start(stages=[{"tasks": T[:1]}])
    fill_disk(small_disk / "ballast")
    for _ in range(3):
        assert world.driver.run_once() is False  # the seed's evaluation cannot be written
    state = world.driver.state()
    assert state.consecutive_failures == 3 and "database or disk is full" in str(state.last_error)
    assert world.outbox.take() == ([], [])

    (small_disk / "ballast").unlink()
    assert world.driver.run_once() is True
    _, evaluate = world.outbox.take()
    assert [(j.run_id, j.task_id) for j in evaluate] == [(run_id, T[0])]
    with world.sessions() as session:
        (event,) = session.scalars(select(Event).where(Event.kind == "driver_error")).all()
    assert event.run_id == run_id and event.payload["failed_ticks"] == 3
    assert "database or disk is full" in event.payload["error"]
