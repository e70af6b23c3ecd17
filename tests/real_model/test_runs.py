"""Runs through the real sandbox path on the real model: an evaluation-only run and a one-child run
on clade-mini. The 135M model fixes nothing; what is asserted is what a user checks afterwards."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.e2e.conftest import SEED_AGENT, Cluster
from tests.helpers import tar_of
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

TASKS = ["clade-mini__textkit-1", "clade-mini__spanlib-1"]
# Room for a busy 2-core machine: a call of the tiny model takes seconds, a few at a time.
LIMITS = {
    "solve_timeout_s": 240,
    "improve_timeout_s": 420,
    "test_timeout_s": 120,
    "overhead_s": 60,
    "max_agent_steps": 4,
}
EXIT_REASONS = {"completed", "max_steps", "time_limit", "token_limit", "model_error"}


def run_config(cluster: Cluster, llama: LlamaServer, **overrides: Any) -> dict[str, Any]:
    with cluster.service.admin as client:
        seed = client.post("/api/seeds", files={"file": ("seed.tgz", tar_of(SEED_AGENT))}).json()["id"]
    model = llama.model
    return {
        "name": "real-model",
        "seed_agent": seed,
        "benchmark": {"name": "clade-mini"},
        "stages": [{"tasks": TASKS, "threshold": 0.0}],
        "selection": {"strategy": "best"},
        "models": local_models(model),
        "budget": BUDGET | {"max_children": 0},
        "limits": LIMITS,
        "parallelism": 1,
    } | overrides


def seed_trajectories_end_with_a_reason(records: Any) -> None:
    for detail in records.details.values():
        trajectory = detail["result"]["trajectory"]
        assert trajectory["model"] == "smollm2", trajectory["model"]  # the run's solve model
        assert trajectory["exit_reason"] in EXIT_REASONS, (detail["task_id"], trajectory["exit_reason"])
        assert trajectory["usage"]["model_calls"] >= 1


@pytest.mark.timeout(1800)
def test_evaluation_only_run_on_the_real_model(
    cluster_factory: Callable[..., Cluster], llama: LlamaServer
) -> None:
    cluster = cluster_factory(None, llm_url=llama.base_url)
    cluster.start_worker("real")
    config = run_config(cluster, llama)
    before = server_counts(llama)
    run_id = start_run(cluster, config)
    wait_finished(cluster, run_id, 1500)
    records = check_run(cluster, run_id, llama, before)
    assert sorted(e.task_id for e in records.evaluations) == sorted(TASKS)
    assert records.steps == []
    assert {u.purpose for u in records.usage} == {"solve"}
    seed_trajectories_end_with_a_reason(records)


@pytest.mark.timeout(2400)
def test_one_child_run_on_the_real_model(cluster_factory: Callable[..., Cluster], llama: LlamaServer) -> None:
    cluster = cluster_factory(None, llm_url=llama.base_url)
    cluster.start_worker("real")
    config = run_config(cluster, llama, budget=BUDGET | {"max_children": 1})
    before = server_counts(llama)
    run_id = start_run(cluster, config)
    run = wait_finished(cluster, run_id, 2100)
    records = check_run(cluster, run_id, llama, before)
    assert "max_children" in run["stop_reason"], run["stop_reason"]
    (step,) = records.steps
    # The improver ran on the real model (its calls metered under their purposes), and the step
    # ended with a reason: a child admitted and scored, or rejected saying why.
    check_step_calls(records, step)
    if step.status == "admitted":
        assert step.child_id in {e.agent_id for e in records.evaluations}
    else:
        assert step.status == "rejected" and step.reason, (step.status, step.reason)
    seed_trajectories_end_with_a_reason(records)
