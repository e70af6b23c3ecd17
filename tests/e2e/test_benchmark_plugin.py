"""End to end: a benchmark installed as a plugin package (written here, outside Clade's files)
is named in a run configuration over the real API and graded by a real worker in Docker;
wrong names and options are refused at POST time naming the field, and a broken or doubly
claimed plugin is refused by name while the service and the other benchmarks go on."""

from __future__ import annotations

import os
import signal
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.registry import BenchmarkRegistry
from contracts.benchmark_options import BenchmarkConfig
from tests.benchmarks.plugin_package import (
    WORDCOUNT,
    WORDCOUNT_TASK,
    write_entry_point,
    write_wordcount_plugin,
)
from tests.e2e.conftest import SEED_AGENT, Cluster, claim_redis_db, release_redis_db, wait_for
from tests.e2e.test_evolution import FAST_LIMITS
from tests.helpers import tar_of
from tests.servers import free_port, service_env, start_service
from worker.curriculum import Curriculum, build_script
from worker.llm.scripted import ScriptedServer

KNOWN = "clade-mini, swebench, swebench-pro, polyglot, folder, harbor, broken, twice, wordcount"


@pytest.fixture
def plugin_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cluster]:
    """A cluster whose service and worker have the plugins installed (on their PYTHONPATH),
    and a scripted model that fixes the plugin's task for the seed agent."""
    site = tmp_path / "site"
    write_wordcount_plugin(site)
    write_entry_point(site, dist="clade-broken", name="broken", value="clade_not_installed:BENCHMARK")
    write_entry_point(site, dist="clade-twice-a", name="twice", value="clade_wordcount:BENCHMARK")
    write_entry_point(site, dist="clade-twice-b", name="twice", value="clade_wordcount:BENCHMARK")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.syspath_prepend(str(site))  # this process reads the plugin's task for the script
    tasks = BenchmarkRegistry.installed().build(BenchmarkConfig(name=WORDCOUNT)).tasks()
    sys.modules.pop("clade_wordcount", None)
    script = build_script(tasks, Curriculum(seed=[WORDCOUNT_TASK]))
    claimant = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    broker = claim_redis_db(claimant)
    try:
        with ScriptedServer(script, api_key="sk-e2e-upstream-key") as server:
            env = service_env(
                tmp_path / "service",
                f"sqlite:///{tmp_path / 'clade.db'}",
                free_port(),
                CLADE_BROKER_URL=broker,
                CLADE_RUN_DRIVER_ENABLED="true",
                CLADE_DRIVER_INTERVAL_S="0.5",
                CLADE_BROKER_VISIBILITY_TIMEOUT_S="7200",
            )
            service = start_service(env)
            cluster = Cluster(service=service, broker_url=broker, llm_url=server.base_url, root=tmp_path)
            try:
                yield cluster
            finally:
                for process in cluster.workers:
                    if process.poll() is None:
                        os.killpg(process.pid, signal.SIGTERM)
                        process.wait(timeout=60)
                service.stop()
    finally:
        release_redis_db(broker, claimant)


def run_config(seed: str, benchmark: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "plugin",
        "seed_agent": seed,
        "benchmark": benchmark,
        "stages": [{"tasks": [WORDCOUNT_TASK]}],
        "selection": {"strategy": "best"},
        "budget": {"max_children": 1},
        "limits": FAST_LIMITS,
        "parallelism": 1,
    }


def refusal(response: Any) -> dict[str, Any]:
    assert response.status_code == 422, response.text
    (issue,) = response.json()["detail"]
    return dict(issue)


def test_a_plugin_benchmark_is_named_and_graded(plugin_cluster: Cluster) -> None:
    cluster = plugin_cluster
    with cluster.service.admin as client:
        seed = client.post("/api/seeds", files={"file": ("seed.tgz", tar_of(SEED_AGENT))}).json()["id"]
        listed = {entry["name"]: entry for entry in client.get("/api/benchmarks").json()}
        unknown = refusal(client.post("/api/runs", json=run_config(seed, {"name": "wordcont"})))
        bad = refusal(
            client.post("/api/runs", json=run_config(seed, {"name": WORDCOUNT, "options": {"copies": 0}}))
        )
        typo = refusal(
            client.post("/api/runs", json=run_config(seed, {"name": WORDCOUNT, "options": {"copeis": 1}}))
        )
        broken = refusal(client.post("/api/runs", json=run_config(seed, {"name": "broken"})))
        twice = refusal(client.post("/api/runs", json=run_config(seed, {"name": "twice"})))
        assert client.get("/api/runs").json()["total"] == 0  # refusals store nothing
        created = client.post("/api/runs", json=run_config(seed, {"name": WORDCOUNT}))
        assert created.status_code == 201, created.text
        run_id = created.json()["id"]

    assert listed[WORDCOUNT] == {"name": WORDCOUNT, "tasks": 1, "subsets": {"all": 1}, "note": None}
    assert (
        "entry point 'broken' = clade_not_installed:BENCHMARK (distribution clade-broken 1.0)"
        in (listed["broken"]["note"])
    )
    assert listed["clade-mini"]["tasks"] and "registered 2 times" in listed["twice"]["note"]
    assert unknown == {
        "loc": ["body", "benchmark", "name"],
        "msg": f"unknown benchmark 'wordcont'; known: {KNOWN}",
        "type": "union_tag_invalid",
    }
    assert (
        bad["loc"] == ["body", "benchmark", "options", "copies"]
        and "greater than or equal to 1" in bad["msg"]
    )
    assert typo == {
        "loc": ["body", "benchmark", "options", "copeis"],
        "msg": "unknown option of wordcount (known: copies)",
        "type": "extra_forbidden",
    }
    assert broken["loc"] == ["body", "benchmark", "name"]
    assert "ModuleNotFoundError: No module named 'clade_not_installed'" in broken["msg"]
    assert (
        twice["loc"] == ["body", "benchmark", "name"] and "clade-twice-a 1.0) and entry point" in twice["msg"]
    )

    cluster.start_worker("plugin")

    def finished() -> dict[str, Any] | None:
        with cluster.service.anonymous as reader:
            run = reader.get(f"/api/runs/{run_id}").json()
        return dict(run) if run["status"] == "completed" else None

    run = wait_for(finished, 900, "the plugin run to complete", cluster)
    assert run["config"]["benchmark"] == {"name": WORDCOUNT, "options": {"copies": 1}}
    with cluster.service.anonymous as reader:
        seed_runs = reader.get(f"/api/agents/{seed}").json()["runs"]
    (evaluation,) = seed_runs[0]["evaluations"]
    # The plugin's own hidden tests graded the seed's fix (the scripted model applied the gold patch).
    assert (evaluation["task_id"], evaluation["resolved"]) == (WORDCOUNT_TASK, True)
