"""Benchmarks loaded once per configuration (name and typed options).

A load can take long (a dataset of thousands of instances). Each configuration loads on its
own: no lock is held across a load, so other configurations and the catalog's listing never
wait on it, and callers asking for the same one wait on the one load. With `wait_s` (the
service) loads run in the catalog's few loader threads and a caller waits at most that long;
past it BenchmarkLoadPending says so and the load goes on, its result kept for the next call.
Without it (workers) the first caller loads in its own thread. `offline` keeps loads from the
network (the service: no fetch inside a request; `clade bench prepare` fetches ahead).
A configuration's options are checked against its benchmark's model before any load (the
caller gets BenchmarkOptionError at once), and configurations that differ only in how their
options were written share one load.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from benchmarks.base import Benchmark, BenchmarkError
from benchmarks.registry import BenchmarkRegistry, Resolved, installed_registry
from benchmarks.spec import LoadContext
from contracts.benchmark_options import BenchmarkConfig, BenchmarkOptionError

# Loads at once; more wait in line (a caller still waits at most its wait_s).
LOADER_THREADS = 2


class BenchmarkLoadPending(BenchmarkError):
    """The benchmark is still loading after the caller's wait: ask again, or prepare it ahead."""

    def __init__(self, name: str, wait_s: float) -> None:
        super().__init__(
            f"the benchmark {name} is still loading after {wait_s:g} s; it goes on loading: ask again"
            f" shortly, or load it ahead with `clade bench prepare {name}` and the same options"
        )


class BenchmarkCatalog:
    """Loads each benchmark configuration once; thread-safe."""

    def __init__(
        self, *, offline: bool = False, wait_s: float | None = None, registry: BenchmarkRegistry | None = None
    ) -> None:
        self.offline = offline
        self.wait_s = wait_s
        self.registry = registry or installed_registry()
        self._loads: dict[str, Future[Benchmark]] = {}
        self._lock = threading.Lock()  # guards _loads only, never held across a load
        self._pool: ThreadPoolExecutor | None = None

    def resolve(self, config: BenchmarkConfig) -> Resolved:
        """The benchmark's spec and typed options; BenchmarkOptionError names what is wrong."""
        return self.registry.resolve(config)

    def spelled_out(self, config: BenchmarkConfig) -> BenchmarkConfig:
        """The configuration with every option spelled out, as a run stores it."""
        return self.resolve(config).config()

    def get(self, config: BenchmarkConfig) -> Benchmark:
        resolved = self.resolve(config)
        key = resolved.key
        with self._lock:
            load = self._loads.get(key)
            starts = load is None or (load.done() and load.exception() is not None)
            if starts:
                # A failed load is tried again: the file may exist now, the cache be filled.
                load = self._loads[key] = Future()
        assert load is not None
        if starts and self.wait_s is None:
            self._fill(load, resolved)  # in the caller's thread (a worker's process may be forked)
        elif starts:
            self._loader().submit(self._fill, load, resolved)
        try:
            return load.result(timeout=self.wait_s)
        except FutureTimeout:
            assert self.wait_s is not None
            raise BenchmarkLoadPending(config.name, self.wait_s) from None

    def _fill(self, load: Future[Benchmark], resolved: Resolved) -> None:
        try:
            load.set_result(resolved.spec.build(resolved.options, LoadContext(offline=self.offline)))
        except Exception as exc:  # noqa: BLE001 (not swallowed: every caller waiting on it raises it)
            load.set_exception(exc)

    def _loader(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(LOADER_THREADS, thread_name_prefix="benchmark-load")
            return self._pool

    def describe(self) -> list[dict[str, Any]]:
        """Every benchmark with its default options: task count and subsets (or why it cannot load)."""
        described: list[dict[str, Any]] = []
        for name in sorted(self.registry.names()):
            try:
                self.registry.spec(name)
            except BenchmarkError as exc:  # a plugin that cannot load, or a name claimed twice
                described.append({"name": name, "tasks": None, "subsets": {}, "note": str(exc)})
                continue
            try:
                benchmark = self.get(BenchmarkConfig(name=name))
            except BenchmarkOptionError as exc:
                described.append(
                    {"name": name, "tasks": None, "subsets": {}, "note": f"needs options: {exc}"}
                )
                continue
            except (BenchmarkError, ValueError) as exc:
                described.append({"name": name, "tasks": None, "subsets": {}, "note": str(exc)})
                continue
            subsets = {subset: len(ids) for subset, ids in benchmark.subsets().items()}
            count = len(benchmark.tasks())
            described.append({"name": name, "tasks": count, "subsets": subsets, "note": None})
        return described
