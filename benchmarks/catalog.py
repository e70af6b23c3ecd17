"""Benchmarks loaded once per (name, options), and the task ids of a run's stages."""

from __future__ import annotations

import json
import random
import threading
from typing import Any

from benchmarks.base import Benchmark, BenchmarkError
from benchmarks.registry import get_benchmark, known_benchmarks
from contracts.config import ConfigFieldError, RunConfig


class BenchmarkCatalog:
    """Loads each (benchmark, options) once; thread-safe."""

    def __init__(self) -> None:
        self._loaded: dict[str, Benchmark] = {}
        self._lock = threading.Lock()

    def get(self, name: str, options: dict[str, Any]) -> Benchmark:
        key = json.dumps([name, options], sort_keys=True)
        with self._lock:
            if key not in self._loaded:
                self._loaded[key] = get_benchmark(name, **options)
            return self._loaded[key]

    def plan_stages(self, config: RunConfig) -> list[list[str]]:
        """The task ids of each stage, checked against the benchmark."""
        try:
            benchmark = self.get(config.benchmark.name, config.benchmark.options)
        except (BenchmarkError, TypeError) as exc:
            raise ConfigFieldError("benchmark.name", str(exc)) from exc
        all_ids = [task.instance_id for task in benchmark.tasks()]
        known = set(all_ids)
        subsets = benchmark.subsets()
        plan: list[list[str]] = []
        for index, stage in enumerate(config.stages):
            if stage.tasks is not None:
                unknown = [task for task in stage.tasks if task not in known]
                if unknown:
                    raise ConfigFieldError(
                        f"stages.{index}.tasks", f"unknown task(s) of {benchmark.name}: {', '.join(unknown)}"
                    )
                plan.append(list(dict.fromkeys(stage.tasks)))
            elif stage.subset is not None:
                if stage.subset not in subsets:
                    names = ", ".join(sorted(subsets))
                    raise ConfigFieldError(
                        f"stages.{index}.subset", f"{benchmark.name} has no subset {stage.subset!r} ({names})"
                    )
                plan.append(list(subsets[stage.subset]))
            else:
                plan.append(all_ids)
            if stage.sample is not None:
                plan[-1] = draw_sample(plan[-1], stage.sample, seed=f"{config.rng_seed}:{index}")
            if not plan[-1]:
                raise ConfigFieldError(f"stages.{index}", "the stage has no tasks")
        return plan

    def describe(self) -> list[dict[str, Any]]:
        """Every registered benchmark with its task count and subsets (or why it cannot load)."""
        described: list[dict[str, Any]] = []
        for name in known_benchmarks():
            try:
                benchmark = self.get(name, {})
            except (BenchmarkError, TypeError, ValueError) as exc:
                described.append({"name": name, "tasks": None, "subsets": {}, "note": str(exc)})
                continue
            subsets = {subset: len(ids) for subset, ids in benchmark.subsets().items()}
            count = len(benchmark.tasks())
            described.append({"name": name, "tasks": count, "subsets": subsets, "note": None})
        return described


def draw_sample(task_ids: list[str], size: int, *, seed: str) -> list[str]:
    """A fixed random subset: the same seed always draws the same tasks, in benchmark order."""
    if size >= len(task_ids):
        return list(task_ids)
    chosen = set(random.Random(seed).sample(task_ids, size))
    return [task for task in task_ids if task in chosen]
