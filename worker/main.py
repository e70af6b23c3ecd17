"""`clade worker`: a Celery worker for this machine or another one.

It needs only the broker URL, the service URL and the worker token (and an LLM
endpoint). At start it removes sandboxes a previous worker of this machine left.
"""

from __future__ import annotations

import logging
import socket
from functools import lru_cache

from celery import Celery

from contracts.celery_app import make_celery
from contracts.settings import Settings
from sandbox.registry import get_backend
from worker.context import WorkerContext, build_context
from worker.tasks import register_tasks

log = logging.getLogger("clade.worker")


def make_worker_app(settings: Settings, owner: str) -> Celery:
    app = make_celery(settings)

    @lru_cache(maxsize=1)
    def context() -> WorkerContext:
        return build_context(settings, owner=owner)

    register_tasks(app, context)
    return app


def run_worker(settings: Settings, *, concurrency: int, name: str | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s: %(levelname)s/%(name)s] %(message)s")
    owner = f"worker-{name or socket.gethostname()}"
    removed = get_backend(settings.sandbox_backend, owner=owner).remove_orphans(owner)
    if removed:
        log.warning("removed %d sandboxes a previous worker left behind", len(removed))
    app = make_worker_app(settings, owner)
    app.worker_main(
        [
            "worker",
            f"--concurrency={concurrency}",
            "--pool=prefork",
            f"--hostname={owner}@%h",
            "--loglevel=INFO",
            "--without-gossip",
            "--without-mingle",
        ]
    )
