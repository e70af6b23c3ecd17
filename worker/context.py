"""Everything a worker needs to run jobs, built once from settings and passed in."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.base import Task
from benchmarks.catalog import BenchmarkCatalog
from contracts.settings import Settings
from sandbox.base import ImageStore, SandboxBackend
from sandbox.ceiling import ResourceCeiling
from sandbox.registry import get_backend
from worker.llm import PriceTable, Upstream, UpstreamConfig, load_price_table, make_upstream
from worker.metrics import TimedBackend, WorkerMetrics
from worker.service_client import ServiceClient

log = logging.getLogger("clade.worker")


class ImageProvider:
    """Which image an agent runs in, asked of the backend's image store: the base image, plus
    a cached layer for an agent's extra requirements, or a task's own image as it is; and the
    agent runtime (Clade's Python with the agent's requirements, mounted read-only into
    whichever image the agent runs in)."""

    def __init__(self, store: ImageStore) -> None:
        self.store = store

    def base(self) -> str:
        return self.store.base(progress=log.info)

    def for_agent(self, requirements: list[str]) -> str:
        return self.store.for_agent(requirements, progress=log.info)

    def for_task(self, task: Task, requirements: list[str]) -> str:
        """The image an agent solves `task` in: the task's own image (SWE-bench: the instance
        image) as it is, pulled when absent; `for_agent` for a task without one."""
        if task.image is None:
            return self.for_agent(requirements)
        return self.store.for_task(task.image, progress=log.info)

    def runtime(self, requirements: list[str]) -> Path:
        """Host folder of the agent runtime with `requirements`, for a read-only mount."""
        return self.store.runtime(self.for_agent(requirements), progress=log.info)


@dataclass
class WorkerContext:
    settings: Settings
    client: ServiceClient
    backend: SandboxBackend
    images: ImageProvider
    upstream: Upstream
    prices: PriceTable
    secrets: list[str]
    catalog: BenchmarkCatalog = field(default_factory=BenchmarkCatalog)
    metrics: WorkerMetrics = field(default_factory=WorkerMetrics)

    @property
    def work_dir(self) -> Path:
        return self.settings.data_dir / "work"


def build_context(settings: Settings, *, owner: str, metrics: WorkerMetrics | None = None) -> WorkerContext:
    if settings.worker_token is None:
        raise ValueError("the worker needs CLADE_WORKER_TOKEN (the service's worker token)")
    if not settings.llm_base_url:
        raise ValueError("the worker needs CLADE_LLM_BASE_URL: an OpenAI-compatible endpoint")
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else ""
    upstream = make_upstream(UpstreamConfig(base_url=settings.llm_base_url, api_key=settings.llm_api_key))
    metrics = metrics or WorkerMetrics()
    ceiling = ResourceCeiling.for_host(
        settings.sandbox_max_memory_mb, settings.sandbox_max_cpus, settings.sandbox_max_pids
    )
    backend = TimedBackend(
        get_backend(
            settings.sandbox_backend,
            allow_unsafe=settings.sandbox_allow_unsafe,
            owner=owner,
            ceiling=ceiling,
            # Grading sandboxes: their read-write folders are watched (see sandbox/disk.py).
            writable_limit_mb=settings.sandbox_disk_mb,
            image_cache_dir=settings.image_cache_dir,
        ),
        metrics,
    )
    return WorkerContext(
        settings=settings,
        client=ServiceClient(settings.service_url, settings.worker_token.get_secret_value()),
        backend=backend,
        images=ImageProvider(backend.images),
        upstream=upstream,
        prices=load_price_table(settings.price_table_path),
        secrets=[key] if key else [],
        metrics=metrics,
    )
