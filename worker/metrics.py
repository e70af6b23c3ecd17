"""A worker's Prometheus metrics: jobs, retries, sandbox start and run times, LLM gateway calls.

Celery's prefork pool runs jobs in child processes, so `clade worker` with
`CLADE_WORKER_METRICS_PORT` uses prometheus-client's multiprocess mode: the command sets
`PROMETHEUS_MULTIPROC_DIR` to a folder of the data dir before prometheus-client is imported,
each process writes its figures there, and the main process serves their sum
(`serve_multiprocess`). Without the port (tests, `perf/`) the instruments count into the
registry given to `WorkerMetrics`, or into none.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server, values
from prometheus_client.multiprocess import MultiProcessCollector

from sandbox.base import ExecResult, Sandbox, SandboxBackend, SandboxSpec
from worker.llm import LLMCall

START_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, float("inf"))
RUN_BUCKETS = (0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 600, 1200, 3600, float("inf"))


class WorkerMetrics:
    """The instruments; `registry=None` counts without registering (multiprocess mode, tests)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.jobs = Counter(
            "clade_worker_jobs",
            # outcome: child, no_child, resolved, unresolved, infrastructure_failure, gave_up,
            # dropped (the service no longer wants it), already_done (answered before it ran)
            "Jobs a worker finished, by kind (improve, evaluate) and outcome",
            ["kind", "outcome"],
            registry=registry,
        )
        self.retries = Counter(
            "clade_worker_job_retries",
            "Jobs given back to the broker for another attempt after an infrastructure failure",
            ["kind"],
            registry=registry,
        )
        self.sandbox_start = Histogram(
            "clade_sandbox_start_seconds",
            "Time to start a sandbox (container created and running)",
            buckets=START_BUCKETS,
            registry=registry,
        )
        self.sandbox_start_failures = Counter(
            "clade_sandbox_start_failures", "Sandboxes that failed to start", registry=registry
        )
        self.sandbox_run = Histogram(
            "clade_sandbox_run_seconds",
            "Commands run in sandboxes (an agent's run, a grading, a validation), by outcome",
            ["outcome"],
            buckets=RUN_BUCKETS,
            registry=registry,
        )
        self.gateway_calls = Counter(
            "clade_gateway_calls",
            "LLM calls through the worker's gateways, by purpose, model and status",
            ["purpose", "model", "status"],
            registry=registry,
        )
        self.gateway_tokens = Counter(
            "clade_gateway_tokens",
            "LLM tokens metered by the worker's gateways, by purpose, model and kind",
            ["purpose", "model", "kind"],
            registry=registry,
        )
        self.gateway_cost = Counter(
            "clade_gateway_cost_usd",
            "LLM cost metered by the worker's gateways in US dollars",
            ["purpose", "model"],
            registry=registry,
        )

    def count_calls(self, calls: Iterable[LLMCall]) -> None:
        for call in calls:
            model = call.model[:200]
            self.gateway_calls.labels(purpose=call.purpose, model=model, status=call.status).inc()
            self.gateway_tokens.labels(purpose=call.purpose, model=model, kind="prompt").inc(
                call.prompt_tokens
            )
            self.gateway_tokens.labels(purpose=call.purpose, model=model, kind="completion").inc(
                call.completion_tokens
            )
            self.gateway_cost.labels(purpose=call.purpose, model=model).inc(call.cost_usd)


class TimedBackend:
    """A sandbox backend whose starts and commands are timed into `metrics`."""

    def __init__(self, inner: SandboxBackend, metrics: WorkerMetrics) -> None:
        self.inner = inner
        self.metrics = metrics
        self.name = inner.name
        self.images = inner.images

    def start(self, spec: SandboxSpec) -> Sandbox:
        started = time.monotonic()
        try:
            sandbox = self.inner.start(spec)
        except BaseException:
            self.metrics.sandbox_start_failures.inc()
            raise
        self.metrics.sandbox_start.observe(time.monotonic() - started)
        return TimedSandbox(sandbox, self.metrics)

    def remove_orphans(self, owner: str | None = None) -> list[str]:
        return self.inner.remove_orphans(owner)

    def remove_abandoned(self) -> list[str]:
        return self.inner.remove_abandoned()


class TimedSandbox:
    def __init__(self, inner: Sandbox, metrics: WorkerMetrics) -> None:
        self.inner = inner
        self.metrics = metrics

    @property
    def id(self) -> str:
        return self.inner.id

    def exec(
        self,
        command: list[str],
        *,
        timeout_s: float,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> ExecResult:
        started = time.monotonic()
        result = self.inner.exec(command, timeout_s=timeout_s, env=env, cwd=cwd)
        self.metrics.sandbox_run.labels(outcome=_outcome(result)).observe(time.monotonic() - started)
        return result

    def write_file(self, path: str, data: bytes) -> None:
        self.inner.write_file(path, data)

    def read_file(self, path: str, *, max_bytes: int = 10_000_000) -> bytes:
        return self.inner.read_file(path, max_bytes=max_bytes)

    def close(self) -> None:
        self.inner.close()


def _outcome(result: ExecResult) -> str:
    if result.timed_out:
        return "timed_out"
    return "ok" if result.exit_code == 0 else "failed"


def multiprocess_mode() -> bool:
    """Whether prometheus-client was imported with `PROMETHEUS_MULTIPROC_DIR` set (its only switch)."""
    return values.ValueClass is not values.MutexValue


def serve_multiprocess(port: int, folder: Path) -> None:
    """Serve the sum of every worker process's figures on `port` (a daemon thread of this process)."""
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(folder))  # type: ignore[no-untyped-call]
    start_http_server(port, registry=registry)
