"""An agent no one here wrote: mini-swe-agent (PyPI), imported with `clade seed import` from
examples/mini-swe-agent, attempts a clade-mini task in the sandbox against the real model through
the gateway, then is evolved by one step (it improves its own folder)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.conftest import Cluster
from tests.images import MINI_SWE_AGENT
from tests.real_model.llama import LlamaServer
from tests.real_model.records import (
    BUDGET,
    check_run,
    check_step_calls,
    local_models,
    server_counts,
    start_run,
    wait_finished,
)

TASK = "clade-mini__textkit-1"


def seed_import(cluster: Cluster, folder: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLADE_")}
    env |= {
        "CLADE_SERVICE_URL": cluster.service.url,
        "CLADE_ADMIN_TOKEN": cluster.service.secrets["admin_token"],
        "CLADE_DATA_DIR": str(cluster.root / "cli"),
    }
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "cli.main",
            "--json",
            "seed",
            "import",
            str(folder),
            "--name",
            "mini-swe-agent",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return str(json.loads(result.stdout)["id"])


@pytest.mark.timeout(2700)
def test_mini_swe_agent_attempts_a_task_and_is_evolved_by_one_step(
    cluster_factory: Callable[..., Cluster], llama: LlamaServer
) -> None:
    cluster = cluster_factory(None, llm_url=llama.base_url)
    cluster.start_worker("mini")
    seed = seed_import(cluster, MINI_SWE_AGENT)
    model = llama.model
    config = {
        "name": "mini-swe-agent",
        "seed_agent": seed,
        "benchmark": {"name": "clade-mini"},
        "stages": [{"tasks": [TASK], "threshold": 0.0}],
        "selection": {"strategy": "best"},
        "models": local_models(model),
        "budget": BUDGET | {"max_children": 1},
        "limits": {
            "solve_timeout_s": 240,
            "improve_timeout_s": 420,
            "test_timeout_s": 120,
            "overhead_s": 60,
            "max_agent_steps": 4,
        },
        "parallelism": 1,
    }
    before = server_counts(llama)
    run_id = start_run(cluster, config)
    wait_finished(cluster, run_id, 2400)
    records = check_run(cluster, run_id, llama, before)

    seed_evaluations = [e for e in records.evaluations if e.agent_id == seed]
    assert [e.task_id for e in seed_evaluations] == [TASK]
    (evaluation,) = seed_evaluations
    result = records.details[evaluation.id]["result"]
    # mini-swe-agent's own trajectory format, written by its own loop, with its exit status.
    trajectory = result["trajectory"]
    assert trajectory["trajectory_format"].startswith("mini-swe-agent"), trajectory.keys()
    assert trajectory["info"]["exit_status"], trajectory["info"]
    assert trajectory["info"]["config"]["model"]["model_name"] == f"openai/{model}"
    # Its calls went through the gateway: metered for this evaluation, under the run's model.
    solve_calls = [u for u in records.usage if u.evaluation_id == evaluation.id]
    answered = [u for u in solve_calls if u.record.get("status") == "ok"]
    assert answered and len(answered) <= trajectory["info"]["model_stats"]["api_calls"] <= len(solve_calls)
    assert "mini-swe-agent finished" in result["agent_log"], result["agent_log"][-2000:]

    # One step of evolution: mini-swe-agent improved its own folder (a child) or was rejected, saying why.
    (step,) = records.steps
    assert step.parent_id == seed
    check_step_calls(records, step)
    if step.status == "admitted":
        assert step.child_id is not None
    else:
        assert step.status == "rejected" and step.reason, (step.status, step.reason)
