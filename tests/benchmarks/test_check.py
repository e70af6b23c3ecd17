"""`check_benchmark` on a fake benchmark whose verdicts each test chooses (no sandbox).

The real thing, on every clade-mini task and both backends, is in test_clade_mini_grading.py.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks import BrokenTask, GradeReport, Task, TestGroupResult
from benchmarks.check import TaskCheck, check_benchmark, describe, judge_task
from sandbox.base import SandboxBackend, SandboxError, SandboxUnavailable
from tests.benchmarks.local_backend import IMAGE, LocalBackend

# (task, diff) -> the report grade() returns, or raises
Verdict = Callable[[Task, str], GradeReport]


def make_task(number: int) -> Task:
    return Task(
        instance_id=f"fake__task-{number}",
        repo="fake/repo",
        base_commit="0" * 40,
        problem_statement=f"# Bug {number}\n",
        patch=f"gold patch {number}\n",
        test_patch="",
        FAIL_TO_PASS=["tests/test_a.py::test_new"],
        PASS_TO_PASS=["tests/test_a.py::test_old"],
        test_command=["pytest"],
    )


def report(task: Task, *, new_passes: bool, old_passes: bool = True) -> GradeReport:
    """What grading reports when the FAIL_TO_PASS / PASS_TO_PASS test passes or not."""

    def group(tests: list[str], passes: bool) -> TestGroupResult:
        return TestGroupResult(success=tests) if passes else TestGroupResult(failure=tests)

    resolved = new_passes and old_passes
    return GradeReport(
        instance_id=task.instance_id,
        resolved=resolved,
        patch_applied=True,
        reason="resolved" if resolved else "not resolved",
        test_statuses={test: "PASSED" for test in task.FAIL_TO_PASS + task.PASS_TO_PASS},
        FAIL_TO_PASS=group(task.FAIL_TO_PASS, new_passes),
        PASS_TO_PASS=group(task.PASS_TO_PASS, old_passes),
        duration_s=0.5,
    )


def sound(task: Task, diff: str) -> GradeReport:
    """A well-made task: only its gold patch makes its new test pass."""
    return report(task, new_passes=diff == task.patch)


class FakeBenchmark:
    name = "fake"

    def __init__(self, count: int, verdict: Verdict = sound, delay_s: float = 0.0):
        self._tasks = [make_task(number) for number in range(count)]
        self.verdict = verdict
        self.delay_s = delay_s
        self.graded: list[tuple[str, str]] = []
        self.threads: set[str] = set()
        self._running = 0
        self.most_at_once = 0
        self._lock = threading.Lock()

    def tasks(self) -> list[Task]:
        return list(self._tasks)

    def subsets(self) -> dict[str, list[str]]:
        return {"all": [task.instance_id for task in self._tasks]}

    def prepare_repo(self, task: Task, dest: Path) -> str:
        raise NotImplementedError

    def grade(
        self, task: Task, diff: str, backend: SandboxBackend, image: str, timeout_s: float
    ) -> GradeReport:
        with self._lock:
            self.graded.append((task.instance_id, diff))
            self.threads.add(threading.current_thread().name)
            self._running += 1
            self.most_at_once = max(self.most_at_once, self._running)
        try:
            time.sleep(self.delay_s)
            return self.verdict(task, diff)
        finally:
            with self._lock:
                self._running -= 1


def run(benchmark: FakeBenchmark, **options: object) -> list[TaskCheck]:
    return check_benchmark(benchmark, LocalBackend(), IMAGE, 10, **options)  # type: ignore[arg-type]


def test_sound_tasks_are_ok_in_the_benchmark_order() -> None:
    benchmark = FakeBenchmark(5, delay_s=0.01)
    checks = run(benchmark)
    assert [check.instance_id for check in checks] == [task.instance_id for task in benchmark.tasks()]
    assert all(check.ok and check.gold_resolves and not check.empty_resolves for check in checks)
    assert all(check.problems == [] and check.warnings == [] for check in checks)
    assert checks[0].duration_s == pytest.approx(1.0)
    # Each task graded twice: with its gold patch and with the empty patch.
    expected = {(task.instance_id, diff) for task in benchmark.tasks() for diff in (task.patch, "")}
    assert sorted(benchmark.graded) == sorted(expected)
    assert describe(checks[0]) == "ok   fake__task-0 (1.0s): gold resolves, empty does not"


def test_gradings_run_in_parallel_on_a_few_threads() -> None:
    benchmark = FakeBenchmark(6, delay_s=0.05)
    run(benchmark, workers=3)
    assert benchmark.most_at_once == 3
    assert threading.current_thread().name not in benchmark.threads
    benchmark = FakeBenchmark(3, delay_s=0.01)
    run(benchmark, workers=1)
    assert benchmark.most_at_once == 1
    with pytest.raises(ValueError):
        run(benchmark, workers=0)


def test_progress_once_per_task_on_the_calling_thread() -> None:
    benchmark = FakeBenchmark(4, delay_s=0.01)
    calls: list[tuple[str, bool, bool, str]] = []

    def progress(instance_id: str, gold: GradeReport, empty: GradeReport) -> None:
        calls.append((instance_id, gold.resolved, empty.resolved, threading.current_thread().name))

    run(benchmark, progress=progress)
    assert sorted(call[0] for call in calls) == [task.instance_id for task in benchmark.tasks()]
    caller = threading.current_thread().name
    assert all(call[1:] == (True, False, caller) for call in calls)


def test_a_subset_of_tasks() -> None:
    benchmark = FakeBenchmark(4)
    chosen = benchmark.tasks()[2:]
    checks = run(benchmark, tasks=chosen)
    assert [check.instance_id for check in checks] == ["fake__task-2", "fake__task-3"]
    assert {instance_id for instance_id, _ in benchmark.graded} == {"fake__task-2", "fake__task-3"}


def test_gold_that_does_not_resolve_and_empty_that_does() -> None:
    def verdict(task: Task, diff: str) -> GradeReport:
        if task.instance_id == "fake__task-0":  # the gold patch misses the bug
            return report(task, new_passes=False)
        if task.instance_id == "fake__task-1":  # no bug at all: every patch resolves it
            return report(task, new_passes=True)
        return sound(task, diff)

    first, second, third = run(FakeBenchmark(3, verdict))
    assert not first.ok and not first.gold_resolves and not first.empty_resolves
    assert first.problems == ["the gold patch does not resolve it: not resolved"]
    assert not second.ok and second.gold_resolves and second.empty_resolves
    # Not a grader failure: the starting code passes (as Exercism's refactoring exercises do).
    assert second.starting_code_passes and not first.starting_code_passes and not third.starting_code_passes
    assert second.problems == ["the starting code already passes its tests (nothing to solve): resolved"]
    assert second.warnings == ["FAIL_TO_PASS tests pass without a fix: tests/test_a.py::test_new"]
    assert third.ok
    assert describe(first).startswith("FAIL fake__task-0 (1.0s): the gold patch does not resolve it")
    assert describe(second).startswith("STUB fake__task-1 (1.0s): the starting code already passes")


def test_empty_that_resolves_while_gold_does_not_is_no_passing_stub() -> None:
    def verdict(task: Task, diff: str) -> GradeReport:
        return report(task, new_passes=diff != task.patch)  # the gold patch breaks it

    [check] = run(FakeBenchmark(1, verdict))
    assert not check.ok and not check.starting_code_passes
    assert check.problems == [
        "the gold patch does not resolve it: not resolved",
        "the empty patch resolves it: resolved",
    ]


def test_base_state_that_breaks_pass_to_pass_is_a_warning() -> None:
    task = make_task(0)
    empty = report(task, new_passes=False, old_passes=False)
    check = judge_task(task, sound(task, task.patch), empty)
    assert check.ok
    assert check.warnings == ["PASS_TO_PASS tests fail on the base state: tests/test_a.py::test_old"]


def test_a_task_whose_grading_fails_is_reported_not_raised() -> None:
    def verdict(task: Task, diff: str) -> GradeReport:
        if task.instance_id == "fake__task-1" and diff:
            raise BrokenTask("fake__task-1: missing file gold.patch")
        if task.instance_id == "fake__task-2" and not diff:
            raise SandboxError("the sandbox vanished")
        return sound(task, diff)

    first, second, third = run(FakeBenchmark(3, verdict))
    assert first.ok
    assert not second.ok and not second.gold_resolves
    assert second.problems == [
        "grading with the gold patch failed: BrokenTask: fake__task-1: missing file gold.patch"
    ]
    assert second.gold.reason == "grading failed: BrokenTask: fake__task-1: missing file gold.patch"
    # A grading that failed says nothing about the task: not "the empty patch does not resolve it".
    assert not third.ok and third.gold_resolves and not third.empty_resolves
    assert third.problems == ["grading with the empty patch failed: SandboxError: the sandbox vanished"]
    assert third.warnings == []


def test_an_unavailable_backend_stops_the_check() -> None:
    def verdict(task: Task, diff: str) -> GradeReport:
        raise SandboxUnavailable("Docker engine unreachable")

    benchmark = FakeBenchmark(20, verdict, delay_s=0.01)
    with pytest.raises(SandboxUnavailable):
        run(benchmark, workers=2)
    assert len(benchmark.graded) < 40  # the gradings not yet started were cancelled
