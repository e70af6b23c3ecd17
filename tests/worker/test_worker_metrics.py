"""A worker's metrics and JSON log lines after one real evaluation job (Celery, run eagerly)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from celery import Celery
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from contracts.jobs import EVALUATE_TASK
from tests.logs_capture import json_log_lines
from tests.servers import free_port, on_a_free_port
from tests.worker.harness import EvaluationStack
from worker.metrics import TimedBackend, WorkerMetrics
from worker.tasks import register_tasks

pytestmark = pytest.mark.docker

SEED_AGENT = Path(__file__).resolve().parents[2] / "seed_agent"


def totals(registry: CollectorRegistry) -> dict[str, float]:
    """Samples (buckets left out) by `name{label=value,...}`, and by `name` summed over labels."""
    found: dict[str, float] = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for sample in family.samples:
            if sample.name.endswith("_bucket"):
                continue
            found[sample.name] = found.get(sample.name, 0.0) + sample.value
            if sample.labels:
                labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
                found[f"{sample.name}{{{labels}}}"] = sample.value
    return found


def test_an_evaluation_job_is_counted_and_followed_by_its_ids(stack: EvaluationStack) -> None:
    registry = CollectorRegistry()
    metrics = WorkerMetrics(registry)
    ctx = dataclasses.replace(stack.ctx, backend=TimedBackend(stack.ctx.backend, metrics), metrics=metrics)
    app = Celery("clade-test-worker")
    register_tasks(app, lambda: ctx, metrics)
    agent_id = stack.import_agent(SEED_AGENT)
    run_id = stack.create_run(agent_id, {})
    job = stack.dispatch(run_id)
    with json_log_lines("worker") as lines:
        outcome = app.tasks[EVALUATE_TASK].apply(args=[job.model_dump(mode="json")]).get()

    found = totals(registry)
    kind = "resolved" if outcome == "resolved" else "unresolved"
    assert found[f"clade_worker_jobs_total{{kind=evaluate,outcome={kind}}}"] == 1, outcome
    assert "clade_worker_job_retries_total" not in found
    # The agent's sandbox and the grading's: two starts, and at least one command in each.
    assert found["clade_sandbox_start_seconds_count"] >= 2
    assert found["clade_sandbox_start_seconds_sum"] > 0
    assert found["clade_sandbox_run_seconds_count"] >= 2
    assert found.get("clade_sandbox_start_failures_total", 0) == 0
    solve_calls = sum(
        v for k, v in found.items() if k.startswith("clade_gateway_calls_total{") and "purpose=solve" in k
    )
    assert solve_calls >= 1
    assert found["clade_gateway_tokens_total"] > 0

    ids = {"run_id": run_id, "evaluation_id": job.evaluation_id}
    done = [line for line in lines if line["message"].startswith(f"evaluation {job.evaluation_id}")]
    assert done and all(line.items() >= ids.items() for line in done), done
    # The gateway answers on its own threads: its lines still name the evaluation.
    calls = [line for line in lines if line["logger"] == "clade.gateway" and "LLM call" in line["message"]]
    assert len(calls) == solve_calls and all(line.items() >= ids.items() for line in calls), calls


def test_clade_worker_serves_metrics_from_every_process(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLADE_", "PROMETHEUS_"))} | {
        "CLADE_DATA_DIR": str(tmp_path / "worker"),
        "CLADE_SERVICE_URL": f"http://127.0.0.1:{free_port()}",
        "CLADE_WORKER_TOKEN": "unused",
        "CLADE_LLM_BASE_URL": "http://127.0.0.1:9/v1",
        "CLADE_LOG_FORMAT": "json",
    }
    log_path = tmp_path / "worker.log"

    def start(port: int) -> subprocess.Popen[bytes]:
        log_path.unlink(missing_ok=True)  # the log of this start only
        argv = [sys.executable, "-m", "cli.main", "worker", "--concurrency", "2", "--name", f"metrics-{port}"]
        with log_path.open("wb") as log:
            return subprocess.Popen(
                argv,
                env=env | {"CLADE_WORKER_METRICS_PORT": str(port)},
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def answers(port: int) -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).status_code == 200
        except httpx.TransportError:
            return False

    process, port = on_a_free_port(start, answers, "the worker's metrics server")
    try:
        text = wait_for_metrics(f"http://127.0.0.1:{port}/metrics", process, deadline_s=180)
        ready = wait_for_line(log_path, "ready.", deadline_s=180)
        # What the running worker wrote, read before Celery's shutdown banner (plain text);
        # a line still being written is left out.
        running_log = log_path.read_text().rpartition("\n")[0]
    finally:
        process.terminate()
        process.wait(timeout=30)
    # The families the worker's processes wrote to the multiprocess folder, summed by the main one.
    assert "clade_sandbox_start_seconds_count" in text, text
    assert (tmp_path / "worker" / "worker-metrics").is_dir()
    assert ready["process"] == "worker" and ready["logger"].startswith("celery"), ready
    assert all(json.loads(line) for line in running_log.splitlines() if line.strip()), running_log


def wait_for_line(path: Path, ending: str, *, deadline_s: float) -> dict[str, Any]:
    """The first JSON line of the log whose message ends so."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        for line in path.read_text().splitlines():
            if line.startswith("{") and json.loads(line)["message"].endswith(ending):
                parsed: dict[str, Any] = json.loads(line)
                return parsed
        time.sleep(0.2)
    raise AssertionError(f"no line ending {ending!r} in {path} within {deadline_s:.0f}s")


def wait_for_metrics(url: str, process: subprocess.Popen[bytes], *, deadline_s: float) -> str:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        assert process.poll() is None, "the worker exited"
        try:
            response = httpx.get(url, timeout=5)
        except httpx.TransportError:
            time.sleep(0.2)
            continue
        if response.status_code == 200 and "clade_sandbox_start_seconds" in response.text:
            return response.text
        time.sleep(0.2)
    raise AssertionError(f"{url} did not serve the worker's metrics within {deadline_s:.0f}s")
