"""End to end: a one-child run moves to completion while strangers try to stall the service.

At the same time: 20 clients that start an export of a large agent and never read (before,
16 of them held every database connection: every other request failed after 30 s and the
run driver recorded errors), 30 slowloris connections, alias bombs at the parse endpoint and
slow-reading clients. Throughout, `/api/health` answers 200 and reads that need the database
are served; the run completes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.conftest import SEED_AGENT, Cluster
from tests.e2e.hostile import HostileLoad, HostileMix
from tests.helpers import tar_of, write_agent
from worker.curriculum import Curriculum

A, B = "clade-mini__textkit-1", "clade-mini__spanlib-1"
LIMITS = {"solve_timeout_s": 60, "improve_timeout_s": 60, "test_timeout_s": 60, "overhead_s": 30}


def import_big_agent(cluster: Cluster, folder: Path, megabytes: int = 12) -> str:
    """An agent whose export (random bytes: gzip cannot shrink them) outlasts any socket buffer."""
    root = write_agent(folder)
    for index in range(megabytes // 4):
        (root / f"blob-{index}.bin").write_bytes(os.urandom(4 * 1024 * 1024))
    with cluster.service.admin as admin:
        response = admin.post("/api/seeds", files={"file": ("big.tgz", tar_of(root))}, data={"name": "big"})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def start_run(cluster: Cluster) -> str:
    with cluster.service.admin as client:
        seed = client.post("/api/seeds", files={"file": ("seed.tgz", tar_of(SEED_AGENT))}).json()["id"]
        config = {
            "name": "under-attack",
            "seed_agent": seed,
            "benchmark": {"name": "clade-mini"},
            "stages": [{"tasks": [A], "threshold": 0.0}],
            "selection": {"strategy": "best"},
            "budget": {"max_children": 1},
            "limits": LIMITS | {"max_agent_steps": 6},
            "parallelism": 1,
        }
        response = client.post("/api/runs", json=config)
        assert response.status_code == 201, response.text
        return str(response.json()["id"])


def observe(cluster: Cluster, run_id: str, seen: dict[str, list[Any]]) -> str:
    """One look, each on a new connection as a load balancer's probe: health, a database read, the run."""
    url = cluster.service.url
    try:
        seen["health"].append(httpx.get(f"{url}/api/health", timeout=30).status_code)
        seen["agents"].append(httpx.get(f"{url}/api/agents", timeout=30).status_code)
        run = httpx.get(f"{url}/api/runs/{run_id}", timeout=30)
        seen["run"].append(run.status_code)
        return str(run.json()["status"]) if run.status_code == 200 else "unknown"
    except httpx.TransportError as exc:
        seen["errors"].append(repr(exc))
        return "unknown"


def test_a_run_completes_and_health_stays_up_under_hostile_clients(
    cluster_factory: Callable[..., Cluster], tmp_path: Path
) -> None:
    cluster = cluster_factory(Curriculum(seed=[A], gen1=[B]), CLADE_HEADER_TIMEOUT_S="2")
    big = import_big_agent(cluster, tmp_path / "big")
    seen: dict[str, list[Any]] = {"health": [], "agents": [], "run": [], "errors": []}
    mix = HostileMix(stalled_readers=20, slowloris=30, bomb_posters=2, slow_readers=2)
    with HostileLoad(cluster.service.url, cluster.service.secrets["admin_token"], big, mix) as load:
        cluster.start_worker("hostile")
        run_id = start_run(cluster)
        deadline = time.monotonic() + 600
        status = "running"
        while status not in ("completed", "failed", "cancelled"):
            assert time.monotonic() < deadline, (status, dict(load.counts), cluster.worker_logs())
            status = observe(cluster, run_id, seen)
            time.sleep(0.5)
        counts = dict(load.counts)
    assert status == "completed", (status, counts)
    assert seen["errors"] == [], seen
    assert set(seen["health"]) == set(seen["agents"]) == set(seen["run"]) == {200}, seen
    assert counts["stalled export started"] == 20
    assert counts["slowloris cut off"] > 0 and counts["slow reader kilobyte"] > 0, counts
    assert counts["alias bomb answered 422"] > 0 and not any(
        what.startswith("alias bomb") and what != "alias bomb answered 422" for what in counts
    ), counts
    with cluster.service.admin as admin:
        events = admin.get(f"/api/runs/{run_id}/events", params={"limit": 1000}).json()
    assert [e for e in events if e["kind"] == "driver_error"] == []
    assert "Exceeded concurrency limit" not in cluster.service.log()
