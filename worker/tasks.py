"""Celery tasks: thin wrappers that parse the job, run it, and sort failures into retry or not.

Infrastructure failures (Docker, the service, the network) are retried with
backoff; once the retries are spent, an evaluation is reported as an infrastructure
failure with the last cause (the run shows it at once). The agent's own failures are
never retried: they are results, already reported to the service by the job. A job the
service no longer wants (its run ended) is dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from celery import Celery, Task

from contracts.jobs import EVALUATE_TASK, IMPROVE_TASK, EvaluateJob, ImproveJob
from sandbox.base import SandboxError
from worker.context import WorkerContext
from worker.errors import InfrastructureError, StaleJobError
from worker.evaluate import evaluate, report_infrastructure_failure
from worker.improve import improve

log = logging.getLogger("clade.worker")
RETRY = {
    "autoretry_for": (InfrastructureError, SandboxError),
    "retry_backoff": 5,
    "retry_backoff_max": 300,
    "retry_jitter": True,
    "max_retries": 5,
    "acks_late": True,
}


def register_tasks(app: Celery, context: Callable[[], WorkerContext]) -> None:
    """Bind the tasks to `app`; `context` gives the worker's context (built once per process).

    `shared=False`: a shared task is added to every Celery app finalized later in the process,
    so a second app (a test's, an embedded worker's) would run the first app's context."""

    @app.task(name=IMPROVE_TASK, bind=True, shared=False, **RETRY)  # type: ignore[untyped-decorator]
    def improve_task(self: Task, job: dict[str, Any]) -> str:
        parsed = ImproveJob.model_validate(job)
        try:
            outcome = improve(context(), parsed)
        except StaleJobError as exc:
            outcome = f"dropped: {exc}"
        log.info("step %s: %s", parsed.step_id, outcome)
        return outcome

    @app.task(name=EVALUATE_TASK, bind=True, shared=False, **RETRY)  # type: ignore[untyped-decorator]
    def evaluate_task(self: Task, job: dict[str, Any]) -> str:
        parsed = EvaluateJob.model_validate(job)
        try:
            result = evaluate(context(), parsed)
            outcome = (
                "resolved" if result.resolved else f"unresolved ({result.failure or result.grade_reason})"
            )
        except StaleJobError as exc:
            outcome = f"dropped: {exc}"
        except (InfrastructureError, SandboxError) as exc:
            if self.request.retries < self.max_retries:
                raise  # Celery retries it (autoretry_for)
            cause = f"gave up after {self.request.retries + 1} attempts: {exc}"
            try:
                report_infrastructure_failure(context(), parsed, cause)
            except StaleJobError as stale:
                outcome = f"dropped: {stale}"
            else:
                outcome = f"not run ({cause})"
        log.info(
            "evaluation %s (%s on %s): %s",
            parsed.evaluation_id,
            parsed.agent_id[:12],
            parsed.task_id,
            outcome,
        )
        return outcome
