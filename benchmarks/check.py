"""Check a benchmark's own data: each task's gold patch resolves it and the empty patch does not.

This is what CI runs for a benchmark (`clade bench check NAME`): every task is graded
twice, through the benchmark's real `grade()`, on a real sandbox backend. A task is
`ok` when the gold patch resolves it and the empty patch does not. Stricter findings
about the task data (a FAIL_TO_PASS test that passes without any fix, a PASS_TO_PASS
test that fails on the base state) are reported as `warnings`.

With `trials` k > 1 every task is graded 2k times, to catch graders that are wrong only
sometimes (benchmarks/trials.py): a task whose gold patch fails in any trial or whose empty
patch resolves in any trial is `quarantined`, with the evidence, and the tests whose status
differed between trials of the same patch are named in `flaky_tests`.

Gradings run in a small thread pool: each one spends most of its time waiting for a
sandbox, so a few in parallel use the machine better than one at a time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from benchmarks.base import Benchmark, BenchmarkError, GradeReport, Task, gold_patch
from benchmarks.gitops import GitError
from benchmarks.trials import Graded, flaky_tests, quarantine_evidence, trial_outcomes
from contracts.quarantine import MAX_TRIALS, FlakyTest, QuarantineFile, TaskEvidence, TrialOutcome
from sandbox.base import SandboxBackend, SandboxError, SandboxUnavailable

Patch = Literal["gold", "empty"]
# Called once per task, when all of its gradings are done: (instance_id, gold, empty), the
# reports of its first trial.
# Always called from the thread that called check_benchmark, in order of completion.
Progress = Callable[[str, GradeReport, GradeReport], None]
# A grading that fails with one of these is a finding about that task; anything else
# (SandboxUnavailable included: no task can be graded then) stops the whole check.
_TASK_ERRORS = (BenchmarkError, SandboxError, GitError, OSError)


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
    gold: GradeReport  # with several trials: the first trial's
    empty: GradeReport
    duration_s: float  # every grading, as if run one after the other
    # What every trial showed (benchmarks/trials.py): one entry per trial, trial 1 first.
    trials: list[TrialOutcome] = Field(default_factory=list)
    quarantined: bool = False  # the gold patch failed in a trial, or the empty patch resolved in one
    evidence: list[str] = Field(default_factory=list)  # why it is quarantined
    flaky_tests: list[FlakyTest] = Field(default_factory=list)


def check_benchmark(
    benchmark: Benchmark,
    backend: SandboxBackend,
    image: str,
    timeout_s: float,
    progress: Progress | None = None,
    workers: int = 2,
    *,
    tasks: Sequence[Task] | None = None,
    trials: int = 1,
) -> list[TaskCheck]:
    """Grade every task (or `tasks`) with its gold patch and with the empty patch, `trials` times.

    Returns one TaskCheck per task, in the benchmark's order. `timeout_s` limits each
    test run; `workers` is how many gradings run at once. Raises SandboxUnavailable
    (after cancelling the gradings not yet started) when the backend cannot run.
    """
    if workers < 1:
        raise ValueError("workers must be at least 1")
    if not 1 <= trials <= MAX_TRIALS:
        raise ValueError(f"trials must be between 1 and {MAX_TRIALS}, not {trials}")
    selected = list(benchmark.tasks() if tasks is None else tasks)
    graded: dict[str, dict[tuple[Patch, int], Graded]] = {task.instance_id: {} for task in selected}
    checks: dict[str, TaskCheck] = {}
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bench-check")
    try:
        pending: dict[Future[Graded], tuple[Task, Patch, int]] = {}
        for task in selected:  # a task's trials side by side: its verdict comes as soon as it can
            for trial in range(trials):
                for patch in ("gold", "empty"):
                    future = pool.submit(_grade, benchmark, task, patch, backend, image, timeout_s)
                    pending[future] = (task, patch, trial)
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                task, patch, trial = pending.pop(future)
                of_task = graded[task.instance_id]
                of_task[patch, trial] = future.result()
                if len(of_task) < 2 * trials:
                    continue
                golds = [of_task["gold", number] for number in range(trials)]
                empties = [of_task["empty", number] for number in range(trials)]
                check = judge_trials(task, golds, empties)
                checks[task.instance_id] = check
                if progress is not None:
                    progress(task.instance_id, check.gold, check.empty)
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return [checks[task.instance_id] for task in selected]


def judge_trials(task: Task, golds: Sequence[Graded], empties: Sequence[Graded]) -> TaskCheck:
    """The TaskCheck for one task from its trials (`golds[i]`, `empties[i]`: trial i+1).

    With one trial it is judge_task's verdict. With several, the problems and warnings of every
    trial (each once), the gold patch resolving only if it did in every trial and the empty patch
    if it did in any; `gold` and `empty` are the first trial's reports. Either way, the trials,
    the quarantine verdict with its evidence, and the flaky tests are filled in.
    """
    outcomes = trial_outcomes(golds, empties)
    verdicts = [
        judge_task(task, gold, empty, gold_error=gold_error, empty_error=empty_error)
        for (gold, gold_error), (empty, empty_error) in zip(golds, empties, strict=True)
    ]
    evidence = quarantine_evidence(outcomes)
    first = verdicts[0]
    problems = list(dict.fromkeys(problem for verdict in verdicts for problem in verdict.problems))
    if len(verdicts) > 1 and any(verdict.ok for verdict in verdicts) and problems:
        problems.insert(0, "the verdict differs between trials")
    return first.model_copy(
        update={
            "ok": not problems,
            "gold_resolves": all(verdict.gold_resolves for verdict in verdicts),
            "empty_resolves": any(verdict.empty_resolves for verdict in verdicts),
            "starting_code_passes": all(verdict.starting_code_passes for verdict in verdicts),
            "problems": problems,
            "warnings": list(dict.fromkeys(warning for verdict in verdicts for warning in verdict.warnings)),
            "duration_s": sum(verdict.duration_s for verdict in verdicts),
            "trials": outcomes,
            "quarantined": bool(evidence),
            "evidence": evidence,
            "flaky_tests": flaky_tests(golds, empties),
        }
    )


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
) -> Graded:
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


def quarantine_record(
    benchmark: str, options: dict[str, Any], trials: int, checks: Sequence[TaskCheck]
) -> QuarantineFile:
    """The quarantine file of a check: its quarantined tasks with their evidence, dated now."""
    return QuarantineFile(
        benchmark=benchmark,
        options=options,
        trials=trials,
        checked_at=datetime.now(UTC),
        tasks={
            check.instance_id: TaskEvidence(
                evidence=check.evidence, trials=check.trials, flaky_tests=check.flaky_tests
            )
            for check in checks
            if check.quarantined
        },
    )
