"""End to end: a run evolves an agent on Harbor task folders (the fixture's, their environments
built offline), with the scripted model, over the real API, a real worker and Docker. The seed
solves one task; its child (the scripted improvement) solves both; every verdict is the tasks'
own verifier's, run over the agent's work folder in a fresh sandbox."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks.base import gold_patch
from sandbox.registry import get_backend
from tests.e2e.conftest import SEED_AGENT, Cluster, wait_for
from tests.e2e.test_evolution import FAST_LIMITS
from tests.helpers import tar_of
from tests.images import HARBOR_FIXTURE, HARBOR_FROM, harbor_fixture, required_base_image
from worker.curriculum import Curriculum, build_script
from worker.llm.script import Script

GREETING, STATS = "write-greeting", "column-stats"


def harbor_script() -> Script:
    """The scripted model's fixes: the diff each task's solve.sh makes, found in a sandbox."""
    benchmark = harbor_fixture()
    backend = get_backend("docker", owner="test-harbor-run-gold")
    try:
        tasks = [
            task.model_copy(update={"patch": gold_patch(benchmark, task, backend, 120)})
            for task in benchmark.tasks()
            if task.instance_id in (GREETING, STATS)
        ]
    finally:
        backend.remove_orphans("test-harbor-run-gold")
    return build_script(tasks, Curriculum(seed=[GREETING], gen1=[STATS]))


def test_a_run_evolves_an_agent_on_harbor_tasks(cluster_factory: Callable[..., Cluster]) -> None:
    script = harbor_script()
    cluster = cluster_factory(Curriculum(), script_edit=lambda _clade_mini: script)
    benchmark: dict[str, Any] = {
        "name": "harbor",
        "options": {"path": str(HARBOR_FIXTURE), "base_images": {HARBOR_FROM: required_base_image()}},
    }
    with cluster.service.admin as client:
        seed = client.post("/api/seeds", files={"file": ("seed.tgz", tar_of(SEED_AGENT))}).json()["id"]
        response = client.post(
            "/api/runs",
            json={
                "name": "harbor",
                "seed_agent": seed,
                "benchmark": benchmark,
                "stages": [{"tasks": [GREETING, STATS]}],
                "selection": {"strategy": "best"},
                "budget": {"max_children": 1},
                "limits": FAST_LIMITS,
                "parallelism": 1,
            },
        )
        assert response.status_code == 201, response.text
        run_id = response.json()["id"]
        typo = client.post("/api/runs", json={"seed_agent": seed, "benchmark": {"name": "harbor"}})
    assert typo.status_code == 422 and typo.json()["detail"][0]["loc"][-1] == "path"
    cluster.start_worker("harbor")

    def finished() -> dict[str, Any] | None:
        with cluster.service.anonymous as reader:
            run = reader.get(f"/api/runs/{run_id}").json()
        return dict(run) if run["status"] == "completed" else None

    wait_for(finished, 900, "the Harbor run to complete", cluster)
    with cluster.service.anonymous as reader:
        nodes = {n["step"]: n for n in reader.get(f"/api/runs/{run_id}/lineage").json()["nodes"]}
        details = {step: reader.get(f"/api/agents/{n['id']}").json() for step, n in nodes.items()}
    assert sorted(nodes) == [0, 1] and nodes[1]["parent_id"] == seed

    def resolved(step: int) -> dict[str, bool]:
        return {e["task_id"]: e["resolved"] for e in details[step]["runs"][0]["evaluations"]}

    assert resolved(0) == {GREETING: True, STATS: False}
    assert resolved(1) == {GREETING: True, STATS: True}
    assert [nodes[0]["score"], nodes[1]["score"]] == [0.5, 1.0]
