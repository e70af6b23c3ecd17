"""Jobs bound to their dispatch, on a worker's real path (live service, Docker sandboxes, Celery run
eagerly): a child the service refuses becomes the step's rejection with the service's reason (the
step never waits for a re-dispatch), and a job delivered again after it was answered is acknowledged
without running anything."""

from __future__ import annotations

import dataclasses
import secrets
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import Celery
from prometheus_client import CollectorRegistry

from contracts.benchmark_options import BenchmarkConfig
from contracts.config import LimitsConfig
from contracts.jobs import EVALUATE_TASK, IMPROVE_TASK, Budget, ImproveJob
from service.db.models import Step
from tests.service.helpers import dispatch_in, open_step_in
from tests.worker.harness import AGENTS_DIR, DEFAULT_LIMITS, EvaluationStack, evaluation_stack
from tests.worker.test_worker_metrics import SEED_AGENT, totals
from worker.metrics import TimedBackend, WorkerMetrics
from worker.tasks import register_tasks

pytestmark = pytest.mark.docker
MAX_FILES = 40  # the service's max_agent_files here: `many:50` goes over it


@pytest.fixture(scope="module")
def refusing_stack(tmp_path_factory: pytest.TempPathFactory, base_image: str) -> Iterator[EvaluationStack]:
    secret = f"sk-job-bound-{secrets.token_hex(8)}"
    owner = f"test-worker-{uuid.uuid4().hex[:10]}"
    root = tmp_path_factory.mktemp("job-bound")
    settings = {"CLADE_MAX_AGENT_FILES": str(MAX_FILES)}
    with evaluation_stack(root, secret=secret, owner=owner, service_settings=settings) as started:
        yield started


@dataclasses.dataclass
class CountingWorker:
    """A Celery app (run eagerly) over the stack's worker context, counting into its own registry."""

    app: Celery
    registry: CollectorRegistry

    def run(self, task: str, job: dict[str, Any]) -> str:
        outcome: str = self.app.tasks[task].apply(args=[job]).get()
        return outcome

    def count(self, name: str) -> float:
        return totals(self.registry).get(name, 0.0)


def counting_worker(stack: EvaluationStack) -> CountingWorker:
    registry = CollectorRegistry()
    metrics = WorkerMetrics(registry)
    ctx = dataclasses.replace(stack.ctx, backend=TimedBackend(stack.ctx.backend, metrics), metrics=metrics)
    app = Celery(f"job-bound-{uuid.uuid4().hex[:6]}")
    register_tasks(app, lambda: ctx, metrics)
    return CountingWorker(app, registry)


def vandal(root: Path, mode: str) -> Path:
    folder = root / f"vandal-{mode.replace(':', '-')}"
    folder.mkdir(parents=True)
    (folder / "agent.toml").write_text('name = "vandal"\nsolve = "python -m vandal"\n')
    shutil.copyfile(AGENTS_DIR / "vandal.py", folder / "vandal.py")
    (folder / "mode.txt").write_text(mode + "\n")
    return folder


def improve_job(stack: EvaluationStack, parent: str, secret: str) -> ImproveJob:
    """A step of a new run on `parent`, dispatched with `secret`, and its job as the driver sends it."""
    run_id = stack.create_run(parent, {})
    step_id = open_step_in(stack.service.database_url, run_id=run_id, parent_id=parent, secret=secret)
    return ImproveJob(
        run_id=run_id,
        limits=LimitsConfig.model_validate(DEFAULT_LIMITS | {"improve_timeout_s": 30}),
        budget=Budget(),
        secret=secret,
        step_id=step_id,
        parent_id=parent,
        improver_id=parent,
        diagnose_model="scripted",
        improve_model="scripted",
        benchmark=BenchmarkConfig(),
        failure=None,
    )


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("link", "a link leading out of the agent"),
        ("chain", "escape: a link leading out of the agent"),
        ("wipe", "patch deletes every file"),
        ("many:50", f"the child would have 53 files; the limit is {MAX_FILES}"),
    ],
)
def test_a_child_the_service_refuses_rejects_its_step_with_the_reason(
    refusing_stack: EvaluationStack, tmp_path: Path, mode: str, reason: str
) -> None:
    stack = refusing_stack
    parent = stack.import_agent(vandal(tmp_path, mode))
    secret = secrets.token_urlsafe(32)
    job = improve_job(stack, parent, secret)
    worker = counting_worker(stack)

    outcome = worker.run(IMPROVE_TASK, job.model_dump(mode="json"))

    assert outcome.startswith("no child: the service refused the child ("), outcome
    assert reason in outcome, outcome
    assert worker.count("clade_worker_jobs_total{kind=improve,outcome=no_child}") == 1
    with stack.service.client("worker_token", job_secret=secret) as client:
        status = client.get(f"/api/worker/steps/{job.step_id}/status").json()
    assert status["status"] == "rejected" and status["open"] is False, status
    assert reason in status["reason"] and status["worker_name"] == "local", status
    with stack.service.anonymous as reader:
        events = reader.get(f"/api/runs/{job.run_id}/events").json()
        agents = reader.get(f"/api/runs/{job.run_id}/agents").json()
    rejected = [e["payload"] for e in events if e["kind"] == "step_rejected"]
    assert len(rejected) == 1 and reason in rejected[0]["reason"], events
    assert rejected[0]["worker"] == "local"
    assert [a["id"] for a in agents["items"]] == [parent]  # no child archived


def test_a_job_delivered_again_after_its_answer_runs_nothing(refusing_stack: EvaluationStack) -> None:
    stack = refusing_stack
    worker = counting_worker(stack)
    agent_id = stack.import_agent(SEED_AGENT)
    run_id = stack.create_run(agent_id, {})
    job = stack.dispatch(run_id).model_dump(mode="json")
    first = worker.run(EVALUATE_TASK, job)
    assert first == "resolved" or first.startswith("unresolved"), first
    started = worker.count("clade_sandbox_start_seconds_count")
    with stack.service.anonymous as reader:
        answered = reader.get(f"/api/agents/{agent_id}/evaluations/{job['evaluation_id']}").json()

    again = worker.run(EVALUATE_TASK, job)  # the broker's redelivery of the same message

    assert again == f"not run: evaluation {job['evaluation_id']} is done already by worker local", again
    assert worker.count("clade_worker_jobs_total{kind=evaluate,outcome=already_done}") == 1
    assert worker.count("clade_sandbox_start_seconds_count") == started  # no agent, no grading
    with stack.service.anonymous as reader:
        after = reader.get(f"/api/agents/{agent_id}/evaluations/{job['evaluation_id']}").json()
    assert after == answered and after["worker_name"] == "local"


def test_a_redispatched_step_refuses_the_lost_message(
    refusing_stack: EvaluationStack, tmp_path: Path
) -> None:
    """The driver sent the step again (new secret): the first message, woken late, is dropped
    unrun; the second one's answer is recorded."""
    stack = refusing_stack
    parent = stack.import_agent(vandal(tmp_path, "link"))
    lost = improve_job(stack, parent, secrets.token_urlsafe(32))
    resent = lost.model_copy(update={"secret": secrets.token_urlsafe(32)})
    dispatch_in(stack.service.database_url, Step, lost.step_id, resent.secret)
    worker = counting_worker(stack)

    dropped = worker.run(IMPROVE_TASK, lost.model_dump(mode="json"))
    assert dropped.startswith("dropped: ") and "wrong job secret" in dropped, dropped
    assert worker.count("clade_sandbox_start_seconds_count") == 0
    answered = worker.run(IMPROVE_TASK, resent.model_dump(mode="json"))
    assert answered.startswith("no child: the service refused the child"), answered
