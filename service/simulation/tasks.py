"""A landscape's task pool as a benchmark, so that a simulated run is planned as the API plans one.

`service.plan.plan_run` checks a configuration's stages and held-out tasks against the tasks of
its benchmark. A simulation has no repositories to grade: its tasks are the landscape's ids, and
the simulated worker answers every job, so nothing ever prepares or grades one of them.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.base import Benchmark, GradeReport, Task
from contracts.benchmark_options import BenchmarkConfig
from sandbox.base import SandboxBackend
from service.simulation.landscape import Landscape


class LandscapeBenchmark:
    """The landscape's tasks, in its order; a single subset, "all"."""

    def __init__(self, landscape: Landscape) -> None:
        self.name = f"the simulated landscape {landscape.config.name}"
        self._tasks = [_task(task_id) for task_id in landscape.task_ids]

    def tasks(self) -> list[Task]:
        return list(self._tasks)

    def subsets(self) -> dict[str, list[str]]:
        return {"all": [task.instance_id for task in self._tasks]}

    def prepare_repo(self, task: Task, dest: Path) -> str:
        raise NotImplementedError("a simulated task has no repository: the simulated worker answers its jobs")

    def grade(
        self, task: Task, diff: str, backend: SandboxBackend, image: str, timeout_s: float
    ) -> GradeReport:
        raise NotImplementedError("a simulated task is never graded: the simulated worker answers its jobs")


class LandscapeCatalog:
    """What `plan_run` loads a simulated run's benchmark from: the landscape, whatever the options."""

    def __init__(self, landscape: Landscape) -> None:
        self._benchmark = LandscapeBenchmark(landscape)

    def get(self, config: BenchmarkConfig) -> Benchmark:
        return self._benchmark

    def spelled_out(self, config: BenchmarkConfig) -> BenchmarkConfig:
        return config  # a landscape has no options to spell out


def _task(task_id: str) -> Task:
    return Task(
        instance_id=task_id,
        repo="simulated",
        base_commit="",
        problem_statement="",
        patch="",
        test_patch="",
        FAIL_TO_PASS=[],
        PASS_TO_PASS=[],
        test_command=["true"],
    )
