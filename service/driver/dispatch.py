"""How the driver hands jobs to workers: a protocol, and the Celery implementation."""

from __future__ import annotations

import logging
from typing import Protocol

from celery import Celery

from contracts.jobs import EVALUATE_TASK, IMPROVE_TASK, EvaluateJob, ImproveJob, Job
from contracts.logs import log_ids
from service.plan import evaluate_time_limit, improve_time_limit

log = logging.getLogger("clade.driver")


class Dispatcher(Protocol):
    def improve(self, job: ImproveJob) -> None: ...

    def evaluate(self, job: EvaluateJob) -> None: ...


class CeleryDispatcher:
    def __init__(self, app: Celery) -> None:
        self.app = app

    def improve(self, job: ImproveJob) -> None:
        with log_ids(run_id=job.run_id, step_id=job.step_id):
            self._send(
                IMPROVE_TASK, job, task_id=f"improve-{job.step_id}", hard=improve_time_limit(job.limits)
            )

    def evaluate(self, job: EvaluateJob) -> None:
        with log_ids(run_id=job.run_id, evaluation_id=job.evaluation_id):
            self._send(
                EVALUATE_TASK,
                job,
                task_id=f"evaluate-{job.evaluation_id}",
                hard=evaluate_time_limit(job.limits),
            )

    def _send(self, name: str, job: Job, *, task_id: str, hard: int) -> None:
        self.app.send_task(
            name,
            kwargs={"job": job.model_dump(mode="json")},
            task_id=task_id,
            time_limit=hard,
            soft_time_limit=hard - 1,
        )
        log.info("sent %s", task_id)
