"""Check a benchmark's own data: each task's gold patch resolves it and the empty patch does not.

This is what CI runs for a benchmark (`clade bench check NAME`): every task is graded
twice, through the benchmark's real `grade()`, on a real sandbox backend. A task is
`ok` when the gold patch resolves it and the empty patch does not. Stricter findings
about the task data (a FAIL_TO_PASS test that passes without any fix, a PASS_TO_PASS
test that fails on the base state) are reported as `warnings`.

Gradings run in a small thread pool: each one spends most of its time waiting for a
sandbox, so a few in parallel use the machine better than one at a time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Literal

from pydantic import BaseModel, ConfigDict

from benchmarks.base import Benchmark, BenchmarkError, GradeReport, Task, gold_patch
from benchmarks.gitops import GitError
from sandbox.base import SandboxBackend, SandboxError, SandboxUnavailable

Patch = Literal["gold", "empty"]
# Called once per task, when both of its gradings are done: (instance_id, gold, empty).
# Always called from the thread that called check_benchmark, in order of completion.
Progress = Callable[[str, GradeReport, GradeReport], None]
# A grading that fails with one of these is a finding about that task; anything else
# (SandboxUnavailable included: no task can be graded then) stops the whole check.
_TASK_ERRORS = (BenchmarkError, SandboxError, GitError, OSError)
_Graded = tuple[GradeReport, str | None]  # a grading's report, and its error if it raised


class TaskCheck(BaseModel):
    """The verdict on one task's own data."""

    model_config = ConfigDict(extra="forbid")

    instance_id: str
    ok: bool  # the gold patch resolves the task and the empty patch does not (both graded)
    gold_resolves: bool
    empty_resolves: bool
    # Both resolve: the starting code already passes (Exercism's refactoring exercises); not
    # a fault of the grader, but nothing a patch can be judged on.
    starting_code_passes: bool = False
    problems: list[str]  # why the task is not ok (empty when it is)
    warnings: list[str]  # findings that do not change `ok`
    gold: GradeReport
    empty: GradeReport
    duration_s: float  # both gradings, as if run one after the other


def check_benchmark(
    benchmark: Benchmark,
    backend: SandboxBackend,
    image: str,
    timeout_s: float,
    progress: Progress | None = None,
    workers: int = 2,
    *,
    tasks: Sequence[Task] | None = None,
) -> list[TaskCheck]:
    """Grade every task (or `tasks`) with its gold patch and with the empty patch.

    Returns one TaskCheck per task, in the benchmark's order. `timeout_s` limits each
    test run; `workers` is how many gradings run at once. Raises SandboxUnavailable
    (after cancelling the gradings not yet started) when the backend cannot run.
    """
    if workers < 1:
        raise ValueError("workers must be at least 1")
    selected = list(benchmark.tasks() if tasks is None else tasks)
    graded: dict[tuple[str, Patch], _Graded] = {}
    checks: dict[str, TaskCheck] = {}
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bench-check")
    try:
        pending: dict[Future[_Graded], tuple[Task, Patch]] = {}
        for task in selected:
            for patch in ("gold", "empty"):
                future = pool.submit(_grade, benchmark, task, patch, backend, image, timeout_s)
                pending[future] = (task, patch)
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                task, patch = pending.pop(future)
                key = task.instance_id
                graded[key, patch] = future.result()
                if (key, "gold") not in graded or (key, "empty") not in graded:
                    continue
                (gold, gold_error), (empty, empty_error) = graded[key, "gold"], graded[key, "empty"]
                check = judge_task(task, gold, empty, gold_error=gold_error, empty_error=empty_error)
                checks[key] = check
                if progress is not None:
                    progress(task.instance_id, check.gold, check.empty)
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return [checks[task.instance_id] for task in selected]


def judge_task(
    task: Task,
    gold: GradeReport,
    empty: GradeReport,
    *,
    gold_error: str | None = None,
    empty_error: str | None = None,
) -> TaskCheck:
    """The TaskCheck for one task, from its gradings with the gold and the empty patch.

    An error (a grading that raised) is a problem: that grading says nothing about the task.
    """
    problems: list[str] = []
    warnings: list[str] = []
    if gold_error is not None:
        problems.append(f"grading with the gold patch failed: {gold_error}")
    elif not gold.resolved:
        problems.append(f"the gold patch does not resolve it: {gold.reason}")
    if empty_error is not None:
        problems.append(f"grading with the empty patch failed: {empty_error}")
    elif empty.resolved and gold_error is None and gold.resolved:
        problems.append(f"the starting code already passes its tests (nothing to solve): {empty.reason}")
    elif empty.resolved:
        problems.append(f"the empty patch resolves it: {empty.reason}")
    if empty_error is None and empty.patch_applied and empty.test_statuses:
        # With the empty patch, the tests ran on the base state plus the hidden tests.
        passing = [test for test in task.FAIL_TO_PASS if test in empty.FAIL_TO_PASS.success]
        if passing:
            warnings.append(f"FAIL_TO_PASS tests pass without a fix: {', '.join(passing)}")
        if empty.PASS_TO_PASS.failure:
            failing = ", ".join(empty.PASS_TO_PASS.failure)
            warnings.append(f"PASS_TO_PASS tests fail on the base state: {failing}")
    return TaskCheck(
        instance_id=task.instance_id,
        ok=not problems,
        gold_resolves=gold.resolved,
        empty_resolves=empty.resolved,
        starting_code_passes=gold_error is None and empty_error is None and gold.resolved and empty.resolved,
        problems=problems,
        warnings=warnings,
        gold=gold,
        empty=empty,
        duration_s=gold.duration_s + empty.duration_s,
    )


def describe(check: TaskCheck) -> str:
    """One line for people: "ok" or "FAIL", the task, and what is wrong if anything."""
    status = "ok  " if check.ok else "STUB" if check.starting_code_passes else "FAIL"
    notes = "; ".join([*check.problems, *check.warnings]) or "gold resolves, empty does not"
    return f"{status} {check.instance_id} ({check.duration_s:.1f}s): {notes}"


def _grade(
    benchmark: Benchmark, task: Task, patch: Patch, backend: SandboxBackend, image: str, timeout_s: float
) -> _Graded:
    """The grading's report and None, or a stand-in report and the error when it raised."""
    started = time.monotonic()
    try:
        diff = gold_patch(benchmark, task, backend, timeout_s) if patch == "gold" else ""
        return benchmark.grade(task, diff, backend, image, timeout_s), None
    except SandboxUnavailable:
        raise
    except _TASK_ERRORS as exc:
        error = f"{type(exc).__name__}: {exc}"
        stand_in = GradeReport(
            instance_id=task.instance_id,
            resolved=False,
            patch_applied=False,
            reason=f"grading failed: {error}",
            duration_s=time.monotonic() - started,
        )
        return stand_in, error
