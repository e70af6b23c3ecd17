"""What a user checks after a run on the real model: records clean, tokens and cost right, the
trajectories kept, every end given a reason, nothing left running."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

from service.db.models import Evaluation, Lease, LLMUsage, Step
from tests.e2e.conftest import Cluster
from tests.real_model.llama import LlamaServer

FINISHED = ("completed", "cancelled", "failed")
# Agents ask for long replies (the seed 4,096 tokens); the tiny model can ramble that far, minutes
# on a busy machine: the tier's runs cap every reply (`budget.max_reply_tokens`).
BUDGET = {"max_reply_tokens": 256}


def server_counts(llama: LlamaServer) -> tuple[int, int]:
    """(prompt tokens, completion tokens) the server has counted so far, cached prompt tokens included."""
    prompt = llama.metric("llamacpp:prompt_tokens_total") + llama.metric(
        "llamacpp:prompt_tokens_cached_total"
    )
    return int(prompt), int(llama.metric("llamacpp:tokens_predicted_total"))


def idle_counts(llama: LlamaServer, before: tuple[int, int], timeout_s: float = 600) -> tuple[int, int]:
    """The server's counts since `before`, read once it works on no request (a try whose client
    gave up runs on to its reply limit)."""
    deadline = time.monotonic() + timeout_s
    while llama.metric("llamacpp:requests_processing") or llama.metric("llamacpp:requests_deferred"):
        if time.monotonic() > deadline:
            raise AssertionError(f"llama-server still busy {timeout_s:.0f}s after the run ended")
        time.sleep(0.5)
    now = server_counts(llama)
    return now[0] - before[0], now[1] - before[1]


def local_models(model: str) -> dict[str, Any]:
    """A run's `models`: `model` for every purpose, declared free (a local server: a model with
    no known price is refused when the run is planned)."""
    models: dict[str, Any] = dict.fromkeys(("solve", "diagnose", "improve"), model)
    models["prices"] = {model: {"prompt": 0, "completion": 0}}
    return models


def start_run(cluster: Cluster, config: dict[str, Any]) -> str:
    with cluster.service.admin as client:
        response = client.post("/api/runs", json=config)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def wait_finished(cluster: Cluster, run_id: str, timeout_s: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        with cluster.service.anonymous as reader:
            run: dict[str, Any] = reader.get(f"/api/runs/{run_id}").json()
        if run["status"] in FINISHED:
            return run
        if time.monotonic() > deadline:
            raise AssertionError(
                f"run {run_id} still {run['status']} after {timeout_s:.0f}s\n{cluster.worker_logs()}"
            )
        time.sleep(1.0)


@dataclass
class RunRecords:
    run: dict[str, Any]
    evaluations: list[Evaluation]
    steps: list[Step]
    usage: list[LLMUsage]
    details: dict[str, dict[str, Any]]  # evaluation id -> its detail from the API (result included)


def check_run(cluster: Cluster, run_id: str, llama: LlamaServer, before: tuple[int, int]) -> RunRecords:
    """Everything this module's docstring names, asserted; the records, for the test's own checks.
    `before`: the server's counts when the run started (no other caller used it meanwhile)."""
    with cluster.service.anonymous as reader:
        run = reader.get(f"/api/runs/{run_id}").json()
    assert run["status"] == "completed", run
    assert run["stop_reason"], "a finished run says why it stopped"

    engine = create_engine(cluster.service.env["CLADE_DATABASE_URL"])
    try:
        with Session(engine) as session:
            evaluations = list(session.scalars(select(Evaluation).where(Evaluation.run_id == run_id)))
            steps = list(session.scalars(select(Step).where(Step.run_id == run_id)))
            usage = list(session.scalars(select(LLMUsage).where(LLMUsage.run_id == run_id)))
            leases = list(session.scalars(select(Lease).where(Lease.run_id == run_id)))
            session.expunge_all()
    finally:
        engine.dispose()

    # Nothing stuck: every evaluation done, every step ended, every lease settled or expired.
    assert evaluations and all(e.status == "done" for e in evaluations), [
        (e.task_id, e.status) for e in evaluations
    ]
    assert all(s.status in ("admitted", "rejected", "failed", "cancelled") for s in steps), [
        s.status for s in steps
    ]
    assert all(lease.settled_at is not None for lease in leases), "a lease is still outstanding"
    assert all(s.reason for s in steps if s.status != "admitted"), [(s.status, s.reason) for s in steps]

    # Every call was metered under the run's model at its declared price of 0 (a local server).
    assert usage, "no LLM call was metered"
    assert {u.model for u in usage} == {llama.model}
    assert all(u.cost_usd == 0 for u in usage)
    # Each call answered (with the tokens it took), or failed saying why. A try the server got and
    # never answered (timed out, or in flight as its sandbox stopped) is counted at its estimate.
    for call in usage:
        r = call.record
        if r.get("status") == "ok":
            assert call.prompt_tokens > 0, r
        else:
            assert r.get("error"), r
            unanswered = (r.get("unanswered_prompt_tokens", 0), r.get("unanswered_completion_tokens", 0))
            assert (call.prompt_tokens, call.completion_tokens) == unanswered, r
        assert bool(r.get("unanswered_attempts")) == bool(
            r.get("unanswered_prompt_tokens") or r.get("unanswered_completion_tokens")
        ), r
    assert run["progress"]["usd"] == 0
    recorded = (sum(u.prompt_tokens for u in usage), sum(u.completion_tokens for u in usage))
    assert run["progress"]["tokens"] == sum(recorded)
    estimated = (
        sum(int(u.record.get("unanswered_prompt_tokens", 0)) for u in usage),
        sum(int(u.record.get("unanswered_completion_tokens", 0)) for u in usage),
    )
    answered = (recorded[0] - estimated[0], recorded[1] - estimated[1])
    # ... and the tokens are the ones the server itself counted over the run, once it has finished
    # what it was still working on (a try whose client went away runs on).
    moved = idle_counts(llama, before)
    calls = [
        (
            u.purpose,
            u.record.get("status"),
            u.prompt_tokens,
            u.completion_tokens,
            u.record.get("error_code"),
            u.record.get("unanswered_attempts", 0),
            round(float(u.record.get("duration_s") or 0), 1),
        )
        for u in usage
    ]
    what = f"the server counted {moved} tokens, the run {recorded} ({estimated} estimated); calls {calls}"
    if estimated == (0, 0):
        assert moved == recorded, what
    else:
        print(what)  # shown with -s: what the estimate was against the server's count
        # What was answered is exact; the unanswered tries' replies stayed within the limit they
        # carried, and their prompts within twice their estimate (about 4 characters a token).
        assert all(a <= m for a, m in zip(answered, moved, strict=True)), what
        assert moved[1] <= recorded[1], what
        assert moved[0] <= answered[0] + 2 * estimated[0], what
    for evaluation in evaluations:
        mine = [u for u in usage if u.evaluation_id == evaluation.id]
        assert evaluation.prompt_tokens == sum(u.prompt_tokens for u in mine), evaluation.task_id
        assert evaluation.completion_tokens == sum(u.completion_tokens for u in mine), evaluation.task_id
        assert evaluation.cost_usd == 0

    # The trajectories are kept, and each evaluation says how it was graded or why it failed.
    details: dict[str, dict[str, Any]] = {}
    with cluster.service.anonymous as reader:
        for evaluation in evaluations:
            answer = reader.get(f"/api/agents/{evaluation.agent_id}/evaluations/{evaluation.id}")
            assert answer.status_code == 200, answer.text
            details[evaluation.id] = answer.json()
    for evaluation in evaluations:
        result = details[evaluation.id]["result"]
        assert result is not None, evaluation.task_id
        assert result["infrastructure_failure"] is None, result["infrastructure_failure"]
        assert result["grade_reason"] or result["failure"], f"{evaluation.task_id}: no reason given"
        trajectory = result["trajectory"]
        assert isinstance(trajectory, dict) and trajectory.get("messages"), (
            f"{evaluation.task_id}: no trajectory"
        )
    return RunRecords(run=run, evaluations=evaluations, steps=steps, usage=usage, details=details)


def check_step_calls(records: RunRecords, step: Step) -> None:
    """The step's model calls are metered under it: a diagnosis, then the improver's calls unless
    the diagnosis failed (the step's reason then says so)."""
    purposes = {u.purpose for u in records.usage if u.step_id == step.id}
    assert "diagnose" in purposes, purposes
    assert "improve" in purposes or "diagnosis" in (step.reason or ""), (purposes, step.reason)
    assert all(u.step_id == step.id for u in records.usage if u.purpose in ("diagnose", "improve"))
