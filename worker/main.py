"""`clade worker`: a Celery worker for this machine or another one.

It needs only the broker URL, the service URL and the worker token (and an LLM endpoint).
Its name is unique per process unless one is given; its sandboxes carry it as their owner
label. At start it removes the sandboxes of any worker of this host that is gone (whatever
its name) and its own name's leftovers, never those of a live worker (`sandbox.liveness`).
With `CLADE_WORKER_METRICS_PORT` it serves Prometheus metrics there (worker/metrics.py).
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
from functools import lru_cache

from celery import Celery

from contracts.celery_app import make_celery
from contracts.logs import configure_logging
from contracts.settings import Settings
from sandbox.disk import remove_abandoned_disks
from sandbox.registry import get_backend
from worker.context import WorkerContext, build_context
from worker.metrics import WorkerMetrics, multiprocess_mode, serve_multiprocess
from worker.tasks import register_tasks

log = logging.getLogger("clade.worker")


def default_worker_name() -> str:
    """Unique per process: two workers on one host (or `clade demo` next to a worker) differ."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(2)}"


def worker_owner(name: str | None) -> str:
    """The owner label of the sandboxes of the worker called `name` (None: a default name)."""
    return f"worker-{name or default_worker_name()}"


def make_worker_app(settings: Settings, owner: str, metrics: WorkerMetrics | None = None) -> Celery:
    app = make_celery(settings)
    metrics = metrics or WorkerMetrics()

    @lru_cache(maxsize=1)
    def context() -> WorkerContext:
        return build_context(settings, owner=owner, metrics=metrics)

    register_tasks(app, context, metrics)
    return app


def run_worker(settings: Settings, *, concurrency: int, name: str | None = None) -> None:
    configure_logging(settings.log_format, process="worker")
    if settings.worker_metrics_port is not None:
        if not multiprocess_mode():
            raise RuntimeError(
                "worker metrics need PROMETHEUS_MULTIPROC_DIR set before prometheus-client is imported"
                " (`clade worker` sets it)"
            )
        serve_multiprocess(settings.worker_metrics_port, settings.worker_metrics_dir)
        log.info("metrics at http://0.0.0.0:%d/metrics", settings.worker_metrics_port)
    owner = worker_owner(name or settings.worker_name)
    log.info("worker %s: its sandboxes are labelled with this owner", owner)
    backend = get_backend(settings.sandbox_backend, allow_unsafe=settings.sandbox_allow_unsafe, owner=owner)
    removed = backend.remove_abandoned()
    if removed:
        log.warning("removed %d sandboxes left behind by workers that are gone", len(removed))
    disks = remove_abandoned_disks(settings.data_dir / "work")
    if disks:
        log.warning("removed %d disks of sandbox folders left behind by workers that are gone", len(disks))
    app = make_worker_app(settings, owner)
    # In JSON mode Celery's banner (plain text on stdout) is left out: every line is JSON.
    quiet = ["--quiet"] if settings.log_format == "json" else []
    app.worker_main(
        [
            *quiet,
            "worker",
            f"--concurrency={concurrency}",
            "--pool=prefork",
            f"--hostname={owner}@%h",
            "--loglevel=INFO",
            "--without-gossip",
            "--without-mingle",
        ]
    )
