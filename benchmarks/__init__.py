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
from benchmarks.registry import get_benchmark, known_benchmarks, register_benchmark

__all__ = [
    "Benchmark",
    "BenchmarkError",
    "BrokenTask",
    "GradeReport",
    "Task",
    "TestGroupResult",
    "TestStatus",
    "UnknownBenchmark",
    "UnknownTask",
    "find_task",
    "get_benchmark",
    "known_benchmarks",
    "register_benchmark",
    "subset_tasks",
]
