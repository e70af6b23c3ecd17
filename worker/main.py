"""`clade worker`: a Celery worker for this machine or another one.

It needs only the broker URL, the service URL and the worker token (and an LLM endpoint).
Its name is unique per process unless one is given; its sandboxes carry it as their owner
label. At start it removes the sandboxes of any worker of this host that is gone (whatever
its name) and its own name's leftovers, never those of a live worker (`sandbox.liveness`).
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
from functools import lru_cache

from celery import Celery

from contracts.celery_app import make_celery
from contracts.settings import Settings
from sandbox.registry import get_backend
from worker.context import WorkerContext, build_context
from worker.tasks import register_tasks

log = logging.getLogger("clade.worker")


def default_worker_name() -> str:
    """Unique per process: two workers on one host (or `clade demo` next to a worker) differ."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(2)}"


def worker_owner(name: str | None) -> str:
    """The owner label of the sandboxes of the worker called `name` (None: a default name)."""
    return f"worker-{name or default_worker_name()}"


def make_worker_app(settings: Settings, owner: str) -> Celery:
    app = make_celery(settings)

    @lru_cache(maxsize=1)
    def context() -> WorkerContext:
        return build_context(settings, owner=owner)

    register_tasks(app, context)
    return app


def run_worker(settings: Settings, *, concurrency: int, name: str | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s: %(levelname)s/%(name)s] %(message)s")
    owner = worker_owner(name or settings.worker_name)
    log.info("worker %s: its sandboxes are labelled with this owner", owner)
    removed = get_backend(settings.sandbox_backend, owner=owner).remove_abandoned()
    if removed:
        log.warning("removed %d sandboxes left behind by workers that are gone", len(removed))
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
