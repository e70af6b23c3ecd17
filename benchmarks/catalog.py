"""Benchmarks loaded once per configuration (name and typed options)."""

from __future__ import annotations

import threading
from typing import Any

from benchmarks.base import Benchmark, BenchmarkError
from benchmarks.registry import build_benchmark, known_benchmarks
from contracts.benchmark_options import (
    BENCHMARK_CONFIGS,
    BenchmarkConfig,
    BenchmarkOptionError,
    benchmark_config,
)


class BenchmarkCatalog:
    """Loads each benchmark configuration once; thread-safe."""

    def __init__(self) -> None:
        self._loaded: dict[str, Benchmark] = {}
        self._lock = threading.Lock()

    def get(self, config: BenchmarkConfig) -> Benchmark:
        key = config.model_dump_json()
        with self._lock:
            if key not in self._loaded:
                self._loaded[key] = build_benchmark(config)
            return self._loaded[key]

    def describe(self) -> list[dict[str, Any]]:
        """Every benchmark with its default options: task count and subsets (or why it cannot load)."""
        described: list[dict[str, Any]] = []
        for name in known_benchmarks():
            if name not in BENCHMARK_CONFIGS:
                continue  # registered from Python only; a run configuration cannot name it
            try:
                benchmark = self.get(benchmark_config(name))
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
