"""Git and the database agree after a crash at any point, and the start-up check repairs drift."""

from __future__ import annotations

import logging
import random
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.helpers import import_seed, tar_of, write_agent
from tests.servers import ServiceClients, ServiceProcess, app_service, free_port, service_env, start_service
from tests.service.helpers import agent_ids, agent_refs, core_patch, open_step_in, start_run


def assert_consistent(service: ServiceClients) -> None:
    rows = agent_ids(service.env["CLADE_DATABASE_URL"])
    assert agent_refs(service.data_dir) == rows
    with service.admin as client:
        report = client.get("/api/admin/consistency").json()
    assert report["missing_commits"] == [] and report["refs_restored"] == [] and report["refs_removed"] == []
    for sha in rows:  # every agent's code is complete and readable
        subprocess.run(
            ["git", "--git-dir", str(service.data_dir / "archive.git"), "archive", "--format=tar", sha],
            capture_output=True,
            check=True,
        )


def hammer(service: ServiceProcess, seed_id: str, run_id: str, tmp_path: Path, stop: threading.Event) -> None:
    """Seed imports and child creations, back to back, until the service dies."""
    url = service.env["CLADE_DATABASE_URL"]
    admin = httpx.Client(base_url=service.url, headers=service.admin.headers, timeout=10)
    worker = httpx.Client(base_url=service.url, headers=service.worker.headers, timeout=10)
    i = 0
    try:
        while not stop.is_set():
            i += 1
            root = write_agent(tmp_path / f"seed-{time.monotonic_ns()}", {"n.txt": f"{i} {time.time_ns()}\n"})
            admin.post("/api/seeds", files={"file": ("s.tgz", tar_of(root))})
            step = open_step_in(url, run_id=run_id, parent_id=seed_id)
            worker.post(f"/api/worker/steps/{step}/child", json={"patch": core_patch(i % 40 + 3, f"v{i}")})
    except (httpx.TransportError, OSError):
        return  # the service was killed mid-request: that is the point
    finally:
        admin.close()
        worker.close()


def test_kill_during_imports_and_children_leaves_no_half_agent(
    live_service: ServiceProcess, tmp_path: Path
) -> None:
    service = live_service
    seed_id = import_seed(service, tmp_path)
    run_id = start_run(service, seed_id)
    rng = random.Random(1234)
    current = service
    try:
        for round_ in range(6):
            stop = threading.Event()
            thread = threading.Thread(
                target=hammer, args=(current, seed_id, run_id, tmp_path / str(round_), stop)
            )
            thread.start()
            time.sleep(rng.uniform(0.3, 1.5))  # a random moment to kill at, not a wait for anything
            current.stop(kill=True)  # SIGKILL, wherever it is
            stop.set()
            thread.join(timeout=30)
            assert not thread.is_alive()
            current = start_service(current.env)
            assert_consistent(current)
        assert len(agent_ids(current.env["CLADE_DATABASE_URL"])) > 2  # work really happened between kills
    finally:
        current.stop()


def test_startup_restores_missing_refs_and_removes_stray_ones(
    tmp_path: Path, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    env = service_env(tmp_path / "data", database_url, free_port())
    with app_service(env) as first:
        seed_id = import_seed(first, tmp_path)
    git_dir = str(first.data_dir / "archive.git")
    subprocess.run(
        ["git", "--git-dir", git_dir, "update-ref", "-d", f"refs/heads/agents/{seed_id}"], check=True
    )
    stray = subprocess.run(
        ["git", "--git-dir", git_dir, "commit-tree", "-m", "stray", f"{seed_id}^{{tree}}"],
        capture_output=True,
        text=True,
        check=True,
        env={
            "GIT_AUTHOR_NAME": "x",
            "GIT_AUTHOR_EMAIL": "x@x",
            "GIT_COMMITTER_NAME": "x",
            "GIT_COMMITTER_EMAIL": "x@x",
        },
    ).stdout.strip()
    subprocess.run(
        ["git", "--git-dir", git_dir, "update-ref", f"refs/heads/agents/{stray}", stray], check=True
    )
    with caplog.at_level(logging.WARNING, logger="clade.service"), app_service(env) as restarted:
        assert agent_refs(restarted.data_dir) == {seed_id}
    assert "1 refs restored, 1 stray refs removed" in caplog.text
