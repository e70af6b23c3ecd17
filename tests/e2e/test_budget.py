"""End to end: a run at parallelism 4 on two workers (two slots each), real sandboxes and
gateways, whose money budget runs out while its evaluations are in flight: spend stays within
`max_usd` plus one call. (Before leases this run spent $0.0041 of $0.003; with them, $0.0019.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import create_engine, func, select
from sqlalchemy.orm import Session

from service.db.models import LLMUsage
from tests.e2e.conftest import SEED_AGENT, Cluster, wait_for
from tests.helpers import tar_of
from worker.curriculum import Curriculum

A, B, C, D = "clade-mini__textkit-1", "clade-mini__spanlib-1", "clade-mini__ledger-1", "clade-mini__calcpy-1"
MAX_USD = 0.003  # about three calls of the seed agent at the scripted model's price
LIMITS = {"solve_timeout_s": 60, "improve_timeout_s": 60, "test_timeout_s": 60, "overhead_s": 30}


def start_run(cluster: Cluster) -> str:
    with cluster.service.admin as client:
        seed = client.post("/api/seeds", files={"file": ("seed.tgz", tar_of(SEED_AGENT))}).json()["id"]
        config = {
            "name": "budget",
            "seed_agent": seed,
            "benchmark": {"name": "clade-mini"},
            "stages": [{"tasks": [A, B, C, D]}],
            "budget": {"max_children": 4, "max_usd": MAX_USD},
            "limits": LIMITS | {"max_agent_steps": 6},
            "parallelism": 4,
        }
        response = client.post("/api/runs", json=config)
        assert response.status_code == 201, response.text
        return str(response.json()["id"])


def run_state(cluster: Cluster, run_id: str) -> dict[str, Any]:
    with cluster.service.anonymous as reader:
        return dict(reader.get(f"/api/runs/{run_id}").json())


def test_parallel_jobs_keep_within_the_money_budget(cluster_factory: Callable[..., Cluster]) -> None:
    cluster = cluster_factory(Curriculum(seed=[A], gen1=[B, D], gen2=[C]))
    cluster.start_worker("budget-a")
    cluster.start_worker("budget-b")
    run_id = start_run(cluster)
    wait_for(lambda: run_state(cluster, run_id)["status"] == "completed", 600, "the run to complete", cluster)
    run = run_state(cluster, run_id)
    engine = create_engine(f"sqlite:///{cluster.root / 'clade.db'}")
    with Session(engine) as session:
        spent, worst, calls = session.execute(
            select(func.sum(LLMUsage.cost_usd), func.max(LLMUsage.cost_usd), func.count()).where(
                LLMUsage.run_id == run_id
            )
        ).one()
    engine.dispose()
    # Tight leases may refuse a diagnosis outright, so the children can run out first.
    assert calls >= 4 and run["stop_reason"].startswith("budget: ")
    assert run["progress"]["usd"] == spent <= MAX_USD + worst
    assert run["progress"]["usd_reserved"] == 0  # a finished run holds nothing in reserve
