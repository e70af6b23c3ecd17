"""End to end: a run of several generations, exactly as the scripted model dictates,
and a worker killed with SIGKILL mid-task whose step still completes exactly once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import docker
import pytest
from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

from sandbox.base import OWNER_LABEL
from service.db.models import Agent, Step
from tests.e2e.conftest import SEED_AGENT, Cluster, wait_for
from tests.e2e.disks import mounts_under
from tests.helpers import tar_of
from worker.curriculum import Curriculum

A, B, C, D, E, F = (
    "clade-mini__textkit-1",
    "clade-mini__spanlib-1",
    "clade-mini__ledger-1",
    "clade-mini__calcpy-1",
    "clade-mini__textkit-2",
    "clade-mini__spanlib-2",
)
CURRICULUM = Curriculum(seed=[A], gen1=[B, D], gen2=[C, E])
FAST_LIMITS = {
    "solve_timeout_s": 60,
    "improve_timeout_s": 60,
    "test_timeout_s": 60,
    "overhead_s": 30,
    "max_agent_steps": 6,
}


def start_run(cluster: Cluster, **overrides: Any) -> tuple[str, str]:
    with cluster.service.admin as client:
        seed = client.post("/api/seeds", files={"file": ("seed.tgz", tar_of(SEED_AGENT))}).json()["id"]
        config = {
            "name": "e2e",
            "seed_agent": seed,
            "benchmark": {"name": "clade-mini"},
            "stages": [{"tasks": [A, B, C], "threshold": 0.3}, {"tasks": [A, B, C, D, E, F]}],
            "selection": {"strategy": "best"},
            "budget": {"max_children": 3},
            "limits": FAST_LIMITS,
            "parallelism": 1,
        } | overrides
        response = client.post("/api/runs", json=config)
        assert response.status_code == 201, response.text
        return seed, response.json()["id"]


def run_state(cluster: Cluster, run_id: str) -> dict[str, Any]:
    with cluster.service.anonymous as reader:
        return dict(reader.get(f"/api/runs/{run_id}").json())


def test_generations_follow_the_script(cluster_factory: Callable[..., Cluster]) -> None:
    cluster = cluster_factory(CURRICULUM)
    cluster.start_worker("e2e")
    seed, run_id = start_run(cluster)
    wait_for(lambda: run_state(cluster, run_id)["status"] == "completed", 900, "the run to complete", cluster)

    with cluster.service.anonymous as reader:
        run = reader.get(f"/api/runs/{run_id}").json()
        nodes = {n["id"]: n for n in reader.get(f"/api/runs/{run_id}/lineage").json()["nodes"]}
        details = {agent_id: reader.get(f"/api/agents/{agent_id}").json() for agent_id in nodes}
    assert run["stop_reason"].startswith("budget: max_children reached (3 of 3 steps attempted")
    by_step = {n["step"]: n for n in nodes.values()}
    assert sorted(by_step) == [0, 1, 2, 3]
    gen0, gen1, gen2, broken = (by_step[i] for i in range(4))
    # The lineage is a chain: `best` picks the newest, best-scoring child each time.
    assert gen0["id"] == seed and gen0["parent_id"] is None
    assert gen1["parent_id"] == seed and gen2["parent_id"] == gen1["id"] and broken["parent_id"] == gen2["id"]

    def resolved(agent_id: str) -> set[str]:
        runs = details[agent_id]["runs"]
        return {e["task_id"] for e in runs[0]["evaluations"] if e["resolved"]}

    assert resolved(gen0["id"]) == {A}
    assert resolved(gen1["id"]) == {A, B, D}
    assert resolved(gen2["id"]) == {A, B, C, D, E}
    assert [gen0["score"], gen1["score"], gen2["score"]] == [1 / 6, 3 / 6, 5 / 6]
    assert [gen0["status"], gen1["status"], gen2["status"]] == ["admitted"] * 3

    stages = {n: details[by_step[n]["id"]]["runs"][0]["stages"] for n in range(3)}
    assert [(s["resolved"], s["total"], s["passed"]) for s in stages[0]] == [(1, 3, True), (1, 6, True)]
    assert [(s["resolved"], s["total"]) for s in stages[1]] == [(2, 3), (3, 6)]
    assert [(s["resolved"], s["total"]) for s in stages[2]] == [(3, 3), (5, 6)]

    # The third child broke its own code: archived, never a parent, rejected with the reason.
    assert broken["status"] == "rejected"
    assert "compile" in broken["reason"] and "exited with" in broken["reason"]
    assert details[broken["id"]]["runs"][0]["evaluations"] == []

    with cluster.service.anonymous as reader:
        diff = reader.get(f"/api/agents/{gen2['id']}/diff").text
    assert "+- RULE-2:" in diff and "agent/prompts/system.md" in diff
    diagnosis = details[gen1["id"]]["runs"][0]["diagnosis"]
    assert diagnosis.startswith("Teach the agent a working rule")
    assert run["progress"]["usd"] > 0 and run["progress"]["tokens"] > 0
    assert details[gen1["id"]]["runs"][0]["usd"] > 0  # what its improvement cost

    # `clade run watch` replays the run's events and returns once the run has finished.
    watched = subprocess.run(
        [sys.executable, "-m", "cli.main", "--json", "run", "watch", run_id],
        env=os.environ | {"CLADE_SERVICE_URL": cluster.service.url},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert watched.returncode == 0, watched.stderr
    kinds = [json.loads(line)["kind"] for line in watched.stdout.splitlines()]
    assert kinds.count("child_created") == 3 and kinds.count("agent_admitted") == 3
    assert kinds[-1] == "run_completed"


@pytest.mark.timeout(1800)  # it waits out the visibility timeout below, on a machine perhaps busy
def test_worker_killed_mid_task_completes_the_step_once(cluster_factory: Callable[..., Cluster]) -> None:
    # The broker hands an unacknowledged task to another worker after its visibility timeout,
    # which the test waits out; the limits stay below it (the service refuses longer ones).
    # They judge behaviour, not speed: a machine at load 20 took more than 8 s for the improver
    # and for the child's own tests, so each gets about a minute (an improve job at most 170 s).
    cluster = cluster_factory(CURRICULUM, visibility_timeout_s=180)
    first = cluster.start_worker("crash")
    limits = FAST_LIMITS | {
        "solve_timeout_s": 60,
        "improve_timeout_s": 50,
        "test_timeout_s": 50,
        "overhead_s": 20,
    }
    seed, run_id = start_run(
        cluster, budget={"max_children": 1}, stages=[{"tasks": [A], "threshold": 0.0}], limits=limits
    )
    engine = create_engine(cluster.service.env["CLADE_DATABASE_URL"])
    engine_docker = docker.from_env()

    def improving_container() -> bool:
        # Only this worker's: other tests may be improving agents on this engine meanwhile.
        mine = {"label": ["dev.clade.step", f"{OWNER_LABEL}={cluster.owner('crash')}"]}
        return bool(engine_docker.containers.list(filters=mine, sparse=True))

    wait_for(improving_container, 300, "the improvement sandbox to start", cluster)
    cluster.kill_worker(first)
    with Session(engine) as session:
        assert session.scalars(select(Step)).one().child_id is None  # killed before the child existed
    cluster.start_worker("crash")  # the same machine coming back: it removes its dead orphans first

    def completed() -> bool:
        return bool(run_state(cluster, run_id)["status"] == "completed")

    wait_for(completed, 1200, "the run to complete", cluster)
    with Session(engine) as session:
        step = session.scalars(select(Step)).one()
        children = session.scalars(select(Agent).where(Agent.parent_id == seed)).all()
    why = (step.status, step.reason, cluster.worker_logs())
    assert step.status == "admitted" and step.child_id is not None, why
    assert [child.id for child in children] == [step.child_id]
    crashed = {"label": f"{OWNER_LABEL}={cluster.owner('crash')}"}
    assert engine_docker.containers.list(all=True, filters=crashed) == []
    engine.dispose()
    # Removed at start by the worker coming back, or by any other worker of this host that
    # started meanwhile (the killed worker's processes are gone, whatever its name).
    # So are the killed worker's loop-mounted disks: the worker coming back runs on the same
    # data dir, and its own disks go when its jobs end.
    work = cluster.worker_data_dir("crash") / "work"
    wait_for(lambda: not mounts_under(work), 60, f"no disk mounted under {work}", cluster)


def test_racing_stops_each_agent_as_the_script_dictates(cluster_factory: Callable[..., Cluster]) -> None:
    # One stage of six tasks at 0.5, raced two at a time (docs/racing.md). The seed resolves A
    # only: 1/2 and 1/4 leave 0.5 within reach, so it gets all six (stage_complete, failed; the
    # seed is admitted anyway). Its child resolves A, B, D: after 4 tasks 3 of 6 reach 0.5 for
    # certain (clearly_passes); the grandchild resolves A-E: the same after 4.
    cluster = cluster_factory(CURRICULUM)
    cluster.start_worker("e2e")
    seed, run_id = start_run(
        cluster,
        stages=[{"tasks": [A, B, C, D, E, F], "threshold": 0.5}],
        evaluation={"policy": "racing", "racing": {"batch": 2}},
    )
    wait_for(lambda: run_state(cluster, run_id)["status"] == "completed", 900, "the run to complete", cluster)
    with cluster.service.anonymous as reader:
        nodes = {n["step"]: n for n in reader.get(f"/api/runs/{run_id}/lineage").json()["nodes"]}
        agents = {a["id"]: a for a in reader.get(f"/api/runs/{run_id}/agents").json()["items"]}
        details = {n["id"]: reader.get(f"/api/agents/{n['id']}").json()["runs"][0] for n in nodes.values()}
        events = reader.get(f"/api/runs/{run_id}/events", params={"limit": 1000}).json()
    assert sorted(nodes) == [0, 1, 2, 3] and nodes[0]["id"] == seed
    raced = [(nodes[i]["attempted"], nodes[i]["race_stop"], nodes[i]["status"]) for i in range(4)]
    assert raced == [
        (6, "stage_complete", "admitted"),
        (4, "clearly_passes", "admitted"),
        (4, "clearly_passes", "admitted"),
        (None, None, "rejected"),  # broke its own code: never evaluated
    ]
    assert [agents[nodes[i]["id"]]["race_stop"] for i in range(3)] == [n[1] for n in raced[:3]]
    assert [len(details[nodes[i]["id"]]["evaluations"]) for i in range(4)] == [6, 4, 4, 0]
    assert [(s["total"], s["passed"], s["stop"]) for s in details[nodes[1]["id"]]["stages"]] == [
        (4, True, "clearly_passes")
    ]
    stops = [
        (e["payload"]["agent_id"], e["payload"]["tasks"]) for e in events if e["kind"] == "stage_stopped"
    ]
    assert stops == [(nodes[0]["id"], 6), (nodes[1]["id"], 4), (nodes[2]["id"], 4)]
