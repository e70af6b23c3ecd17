"""Celery tasks: thin wrappers that parse the job, run it, and sort failures into retry or not.

Infrastructure failures (Docker, the service, the network) are retried with
backoff; once the retries are spent, an evaluation is reported as an infrastructure
failure with the last cause (the run shows it at once). The agent's own failures are
never retried: they are results, already reported to the service by the job. A job the
service no longer wants (its run ended, or it was sent again since) is dropped; before it runs,
each job asks the service whether it is still open, and one answered already (a message the
broker delivered again) is acknowledged without running the agent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from celery import Celery, Task

from contracts.jobs import EVALUATE_TASK, IMPROVE_TASK, EvaluateJob, ImproveJob
from contracts.logs import log_ids
from sandbox.base import SandboxError
from worker.context import WorkerContext
from worker.errors import InfrastructureError, StaleJobError
from worker.evaluate import evaluate, report_infrastructure_failure
from worker.improve import improve
from worker.metrics import WorkerMetrics

log = logging.getLogger("clade.worker")
RETRY = {
    "autoretry_for": (InfrastructureError, SandboxError),
    "retry_backoff": 5,
    "retry_backoff_max": 300,
    "retry_jitter": True,
    "max_retries": 5,
    "acks_late": True,
}


def register_tasks(
    app: Celery, context: Callable[[], WorkerContext], metrics: WorkerMetrics | None = None
) -> None:
    """Bind the tasks to `app`; `context` gives the worker's context (built once per process).

    `shared=False`: a shared task is added to every Celery app finalized later in the process,
    so a second app (a test's, an embedded worker's) would run the first app's context."""
    counted = metrics or WorkerMetrics()

    @app.task(name=IMPROVE_TASK, bind=True, shared=False, **RETRY)  # type: ignore[untyped-decorator]
    def improve_task(self: Task, job: dict[str, Any]) -> str:
        parsed = ImproveJob.model_validate(job)
        with log_ids(run_id=parsed.run_id, step_id=parsed.step_id), _retries(self, counted, "improve"):
            try:
                closed = _closed(context(), "steps", parsed.step_id, parsed.secret)
                if closed is not None:
                    outcome, kind = closed
                else:
                    outcome = improve(context(), parsed)
                    kind = "child" if outcome.startswith("child") else "no_child"
            except StaleJobError as exc:
                outcome, kind = f"dropped: {exc}", "dropped"
            counted.jobs.labels(kind="improve", outcome=kind).inc()
            log.info("step %s: %s", parsed.step_id, outcome)
            return outcome

    @app.task(name=EVALUATE_TASK, bind=True, shared=False, **RETRY)  # type: ignore[untyped-decorator]
    def evaluate_task(self: Task, job: dict[str, Any]) -> str:
        parsed = EvaluateJob.model_validate(job)
        with (
            log_ids(run_id=parsed.run_id, evaluation_id=parsed.evaluation_id),
            _retries(self, counted, "evaluate"),
        ):
            outcome, kind = _evaluate(self, context, parsed)
            counted.jobs.labels(kind="evaluate", outcome=kind).inc()
            log.info(
                "evaluation %s (%s on %s): %s",
                parsed.evaluation_id,
                parsed.agent_id[:12],
                parsed.task_id,
                outcome,
            )
            return outcome


def _evaluate(task: Task, context: Callable[[], WorkerContext], job: EvaluateJob) -> tuple[str, str]:
    """What happened, in words and as the metrics' outcome label."""
    try:
        closed = _closed(context(), "evaluations", job.evaluation_id, job.secret)
        if closed is not None:
            return closed
        result = evaluate(context(), job)
    except StaleJobError as exc:
        return f"dropped: {exc}", "dropped"
    except (InfrastructureError, SandboxError) as exc:
        if task.request.retries < task.max_retries:
            raise  # Celery retries it (autoretry_for)
        cause = f"gave up after {task.request.retries + 1} attempts: {exc}"
        try:
            report_infrastructure_failure(context(), job, cause)
        except StaleJobError as stale:
            return f"dropped: {stale}", "dropped"
        return f"not run ({cause})", "infrastructure_failure"
    if result.resolved:
        return "resolved", "resolved"
    return f"unresolved ({result.failure or result.grade_reason})", "unresolved"


def _closed(ctx: WorkerContext, kind: str, item_id: str, secret: str) -> tuple[str, str] | None:
    """None while the service still wants this job answered; else what to log and count: a job
    answered already (`already_done`) or cancelled with its run (`dropped`)."""
    status = ctx.client.job_status(kind, item_id, secret)
    if status.get("open"):
        return None
    state = str(status.get("status"))
    if state == "cancelled":
        return f"dropped: {kind[:-1]} {item_id} was cancelled", "dropped"
    by = f" by worker {status['worker_name']}" if status.get("worker_name") else ""
    return f"not run: {kind[:-1]} {item_id} is {state} already{by}", "already_done"


@contextmanager
def _retries(task: Task, metrics: WorkerMetrics, kind: str) -> Iterator[None]:
    """Counts a job given back for another attempt: the errors Celery's autoretry retries."""
    try:
        yield
    except (InfrastructureError, SandboxError):
        if task.request.retries < task.max_retries:
            metrics.retries.labels(kind=kind).inc()
        else:
            metrics.jobs.labels(kind=kind, outcome="gave_up").inc()
        raise
