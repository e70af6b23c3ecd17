"""Benchmarks: list tasks, prepare a task's repository, grade an agent's diff."""

from benchmarks.base import (
    Benchmark,
    BenchmarkError,
    BrokenTask,
    GradeReport,
    Task,
    TestGroupResult,
    TestStatus,
    UnknownBenchmark,
    UnknownTask,
    find_task,
    subset_tasks,
)
from benchmarks.registry import BenchmarkRegistry, get_benchmark, known_benchmarks
from benchmarks.spec import BenchmarkSpec, LoadContext

__all__ = [
    "Benchmark",
    "BenchmarkError",
    "BenchmarkRegistry",
    "BenchmarkSpec",
    "BrokenTask",
    "GradeReport",
    "LoadContext",
    "Task",
    "TestGroupResult",
    "TestStatus",
    "UnknownBenchmark",
    "UnknownTask",
    "find_task",
    "get_benchmark",
    "known_benchmarks",
    "subset_tasks",
]
