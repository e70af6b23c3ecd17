"""An evaluation that cannot run is reported, with the cause, instead of staying pending.

A SWE-bench fixture dataset whose instances name an image that this engine does not have
(images are never pulled): the worker's real evaluation path tries a bounded number of
times, then the service records the evaluation as an infrastructure failure naming the
image, long before the driver would re-dispatch it, and the run's events carry the cause.
Any other infrastructure error is retried by Celery; the last attempt reports it.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from pathlib import Path
from typing import Any

import docker
import pytest
from celery import Celery

from benchmarks.registry import benchmark_config
from benchmarks.swebench import load_harness
from contracts.config import LimitsConfig
from contracts.jobs import EVALUATE_TASK
from contracts.records import EvaluationResult
from sandbox.docker_backend import DockerBackend
from service.plan import evaluate_time_limit
from tests.benchmarks.swebench.fixture_set import instance_rows, repositories, write_jsonl
from tests.helpers import CLOSED_REGISTRY
from tests.worker.harness import DEFAULT_LIMITS, evaluation_stack
from worker.tasks import RETRY, register_tasks

pytestmark = pytest.mark.docker

SEED_AGENT = Path(__file__).resolve().parents[2] / "seed_agent"
TASK_ID = "clade-fixtures__tinyinv-1"


def test_an_unbuildable_task_image_fails_the_evaluation_at_once_with_its_cause(
    tmp_path: Path, secret: str, docker_client: Any
) -> None:
    # On a registry at a closed loopback port: the pull fails at once, nothing leaves this machine.
    missing = f"{CLOSED_REGISTRY}/clade/no-such-image-{uuid.uuid4().hex[:8]}:never-built"
    repos = repositories(tmp_path / "repos")
    commits = {name: commit for name, (_, commit) in repos.items()}
    rows = instance_rows(load_harness().instance_format, commits, dict.fromkeys(repos, missing))
    dataset = write_jsonl(rows, tmp_path / "missing-images.jsonl")
    benchmark = {"name": "swebench", "options": {"dataset": str(dataset)}}
    owner = f"test-worker-{uuid.uuid4().hex[:10]}"
    with evaluation_stack(
        tmp_path / "stack", secret=secret, owner=owner, benchmark=benchmark, task_id=TASK_ID
    ) as stack:
        task = next(
            t for t in stack.ctx.catalog.get(benchmark_config("swebench", benchmark["options"])).tasks()
        )
        image = task.image
        assert image is not None and not docker_client.images.list(name=image)
        evaluated = stack.evaluate(SEED_AGENT)
        with stack.service.anonymous as client:
            events = client.get(f"/api/runs/{evaluated.run_id}/events")
        assert events.status_code == 200, events.text
        leftovers = stack.clade_containers()

    result = evaluated.result
    assert evaluated.detail["status"] == "done" and evaluated.detail["resolved"] is False
    assert not evaluated.returned.resolved
    cause = result.infrastructure_failure
    assert cause is not None, evaluated.detail
    assert image in cause and "could not be pulled" in cause, cause
    assert result.failure is None  # not the agent's fault
    # Reported by the worker's own bounded retries, not after the driver's re-dispatch timeout.
    redispatch_after = evaluate_time_limit(LimitsConfig.model_validate(DEFAULT_LIMITS))
    assert evaluated.wall_s < 30 < redispatch_after, (evaluated.wall_s, redispatch_after)
    done = [e for e in events.json() if e["kind"] == "evaluation_done"]
    assert [e["payload"].get("infrastructure_failure") for e in done] == [cause]
    assert leftovers == []


def test_an_evaluation_whose_retries_run_out_is_reported_with_the_last_cause(
    tmp_path: Path, secret: str, base_image: str
) -> None:
    # A worker whose sandboxes go to an engine that is not there: every attempt fails with
    # a SandboxError, Celery retries it (at once, run eagerly here), and the last attempt
    # reports the evaluation instead of leaving it pending.
    owner = f"test-worker-{uuid.uuid4().hex[:10]}"
    with evaluation_stack(tmp_path / "stack", secret=secret, owner=owner) as stack:
        gone = docker.DockerClient(base_url=f"unix://{tmp_path}/no-engine.sock", version="1.41")
        broken = dataclasses.replace(stack.ctx, backend=DockerBackend(gone, owner=owner))
        app = Celery("clade-test-worker")
        register_tasks(app, lambda: broken)
        agent_id = stack.import_agent(SEED_AGENT)
        run_id = stack.create_run(agent_id, {})
        job = stack.dispatch(run_id)
        started = time.monotonic()
        outcome = app.tasks[EVALUATE_TASK].apply(args=[job.model_dump(mode="json")]).get()
        wall_s = time.monotonic() - started
        with stack.service.anonymous as client:
            detail = client.get(f"/api/agents/{agent_id}/evaluations/{job.evaluation_id}").json()
        gone.close()

    attempts = int(RETRY["max_retries"]) + 1
    assert outcome.startswith(f"not run (gave up after {attempts} attempts: "), outcome
    assert detail["status"] == "done" and detail["resolved"] is False
    cause = EvaluationResult.model_validate(detail["result"]).infrastructure_failure
    assert cause is not None and cause.startswith(f"gave up after {attempts} attempts: ")
    assert "starting a sandbox from" in cause and "Connection aborted" in cause, cause
    assert wall_s < 120, wall_s


def test_a_polyglot_language_whose_toolchain_image_is_absent_fails_its_evaluation_naming_both(
    tmp_path: Path, secret: str, docker_client: Any
) -> None:
    # The service took the run without asking any engine; the worker finds the image missing.
    image = f"clade/no-such-toolchains-{uuid.uuid4().hex[:8]}:never-built"
    toolchains = Path(__file__).parents[1] / "benchmarks" / "polyglot" / "toolchains"
    benchmark = {
        "name": "polyglot",
        "options": {"root": str(toolchains), "languages": ["go"], "image": image},
    }
    owner = f"test-worker-{uuid.uuid4().hex[:10]}"
    with evaluation_stack(
        tmp_path / "stack", secret=secret, owner=owner, benchmark=benchmark, task_id="polyglot__go__digit-sum"
    ) as stack:
        evaluated = stack.evaluate(SEED_AGENT)
        leftovers = stack.clade_containers()

    cause = evaluated.result.infrastructure_failure
    assert evaluated.detail["status"] == "done" and evaluated.detail["resolved"] is False
    assert cause == (
        f"task polyglot__go__digit-sum cannot run here: polyglot cannot run go exercises: the image {image} "
        "is not on this worker's engine; build or load it there (the run's `image` option names it)"
    ), cause
    assert evaluated.result.failure is None  # not the agent's fault
    assert not docker_client.images.list(name=image)  # neither built nor pulled
    assert leftovers == []
