"""The benchmark seam: task and grade records, and the protocol every benchmark implements.

Tasks use the SWE-bench instance format (same field names), plus the fields Clade
needs to run them: the test command and where the repository lives in the sandbox.
"""

from __future__ import annotations

import json
import time
from enum import StrEnum
from pathlib import Path
from typing import Literal, NamedTuple, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from benchmarks.gitops import apply_patch, patch_paths, reset_paths
from benchmarks.graded_diff import drop_test_infrastructure
from sandbox.base import ImageStore, Progress, SandboxBackend

DEFAULT_REPO_PATH = "/clade/repo"


class BenchmarkError(RuntimeError):
    """Root of the errors benchmarks raise."""


class UnknownBenchmark(BenchmarkError, LookupError):
    """No benchmark is registered under that name."""


class OptionError(BenchmarkError, ValueError):
    """A benchmark option is wrong, found when the benchmark loads (a missing folder, an
    instance the dataset lacks); `field` is its path within the options (`instance_ids`)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class UnknownTask(BenchmarkError, LookupError):
    """The benchmark has no task with that instance id."""


class BrokenTask(BenchmarkError):
    """The task's own data is wrong (its test patch does not apply, its files are missing)."""


class Task(BaseModel):
    """One task, in SWE-bench instance format plus Clade's fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    patch: str  # the gold patch; never shown to the agent
    test_patch: str  # hidden tests, applied only when grading
    FAIL_TO_PASS: list[str]
    PASS_TO_PASS: list[str]
    hints_text: str = ""
    created_at: str = ""
    version: str = ""
    # Clade: argv run from `repo_path` in the grading sandbox (no shell).
    test_command: list[str] = Field(min_length=1)
    repo_path: str = DEFAULT_REPO_PATH
    # Clade: the image the agent runs in, as it is (Clade's runtime is mounted into it, off
    # its PATH); None: Clade's base image.
    image: str | None = None
    # Clade: folders put first on the image's PATH for the commands the agent runs for the
    # task (SWE-bench: the testbed env that the eval script activates).
    tools_path: list[str] = Field(default_factory=list)
    # Clade: the task's own limit on the agent's solve (Harbor's [agent].timeout_sec), applied
    # under the run's; None: the run's alone.
    solve_timeout_s: float | None = Field(default=None, gt=0)

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _decode_json_list(cls, value: object) -> object:
        # SWE-bench datasets store these lists as JSON-encoded strings.
        try:
            return json.loads(value) if isinstance(value, str) else value
        except RecursionError as exc:  # the decoder recurses per `[`: a traceback otherwise
            raise ValueError("a JSON-encoded list nested too deep") from exc


class TestStatus(StrEnum):
    __test__ = False  # not a pytest test class, despite the name

    PASSED = "PASSED"
    FAILED = "FAILED"
    ERROR = "ERROR"
    SKIPPED = "SKIPPED"
    XFAIL = "XFAIL"
    MISSING = "MISSING"  # expected but never reported: it did not run, or did not exist

    @property
    def ok(self) -> bool:
        # As in the SWE-bench harness, an expected failure counts as a pass.
        return self in (TestStatus.PASSED, TestStatus.XFAIL)


class TestGroupResult(BaseModel):
    """Which tests of a group (FAIL_TO_PASS or PASS_TO_PASS) passed, as SWE-bench reports it."""

    __test__ = False  # not a pytest test class, despite the name

    success: list[str] = Field(default_factory=list)
    failure: list[str] = Field(default_factory=list)


class GradeReport(BaseModel):
    """The verdict on one diff for one task. Versioned: it is stored with the evaluation."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    instance_id: str
    resolved: bool
    patch_applied: bool
    reason: str  # one line for people: why resolved or not
    test_statuses: dict[str, TestStatus] = Field(default_factory=dict)
    FAIL_TO_PASS: TestGroupResult = Field(default_factory=TestGroupResult)
    PASS_TO_PASS: TestGroupResult = Field(default_factory=TestGroupResult)
    tests_exit_code: int | None = None
    tests_timed_out: bool = False
    log_tail: str = ""
    duration_s: float = 0.0
    # Paths of the diff left out of grading as test infrastructure -> the rule (graded_diff.py).
    dropped_for_grading: dict[str, str] = Field(default_factory=dict)
    # Non-test paths of the diff that reach into the test runner -> what (runner_tampering.py);
    # flagged for review, not a verdict.
    runner_tampering: dict[str, str] = Field(default_factory=dict)
    # Evidence that the test run's results were forged; a tampered verdict is never resolved.
    tampered: str | None = None
    # A graded reward between 0 and 1, for benchmarks whose verifier gives one (Harbor's).
    reward: float | None = None

    @model_validator(mode="after")
    def _tampered_is_never_resolved(self) -> GradeReport:
        if self.tampered is not None and self.resolved:
            raise ValueError("a tampered verdict cannot be resolved")
        return self


def group_reason(
    task: Task, fail_to_pass: TestGroupResult, pass_to_pass: TestGroupResult, *, resolved: bool
) -> str:
    """The one-line verdict on the test groups, shared by the benchmarks that grade by them."""
    if resolved:
        return "resolved: all FAIL_TO_PASS and PASS_TO_PASS tests pass"
    return (
        f"not resolved: {len(fail_to_pass.failure)}/{len(task.FAIL_TO_PASS)} FAIL_TO_PASS "
        f"and {len(pass_to_pass.failure)}/{len(task.PASS_TO_PASS)} PASS_TO_PASS tests fail"
    )


def unapplied(task: Task, error: str, started: float, note: str = "") -> GradeReport:
    """The verdict on a diff that does not apply to the task's repository."""
    return GradeReport(
        instance_id=task.instance_id,
        resolved=False,
        patch_applied=False,
        reason=f"the patch does not apply: {error}{note}",
        duration_s=time.monotonic() - started,
    )


class Applied(NamedTuple):
    """The agent's diff on the repository: the verdict if grading cannot go on, and what of
    the diff was left out as test infrastructure."""

    refused: GradeReport | None
    dropped: dict[str, str]


def apply_for_grading(task: Task, repo: Path, diff: str, started: float) -> Applied:
    """Apply the agent's `diff` to `repo`, put back what it did to test infrastructure
    (`graded_diff.py`), then apply the task's hidden tests over it (they win over whatever
    the agent did to the same files)."""
    applied = apply_patch(repo, diff)
    if not applied.applied:
        return Applied(unapplied(task, applied.error, started), {})
    hidden = patch_paths(task.test_patch)
    dropped = drop_test_infrastructure(repo, diff, keep=hidden)
    reset_paths(repo, hidden)
    tests_applied = apply_patch(repo, task.test_patch)
    if tests_applied.applied:
        return Applied(None, dropped)
    # The test patch applies to the base state (each benchmark's check makes sure), so the
    # agent's diff is in the way, e.g. it replaced a test folder by a symlink.
    refused = GradeReport(
        instance_id=task.instance_id,
        resolved=False,
        patch_applied=True,
        reason=f"the hidden tests do not apply over the patch: {tests_applied.error}",
        duration_s=time.monotonic() - started,
        dropped_for_grading=dropped,
    )
    return Applied(refused, dropped)


def dropped_note(dropped: dict[str, str]) -> str:
    """The reason's suffix naming what grading left out."""
    return f"; left out of grading as test infrastructure: {', '.join(dropped)}" if dropped else ""


class Benchmark(Protocol):
    """A set of tasks: lists them, prepares a task's repository, grades a diff."""

    @property
    def name(self) -> str: ...

    def tasks(self) -> list[Task]:
        """Every task, in the benchmark's fixed order."""
        ...

    def subsets(self) -> dict[str, list[str]]:
        """Named lists of instance ids (at least "all")."""
        ...

    def prepare_repo(self, task: Task, dest: Path) -> str:
        """Write the task's repository at `dest` as a git work tree with one commit (the
        base state, without the hidden tests); return that commit's sha."""
        ...

    def grade(
        self, task: Task, diff: str, backend: SandboxBackend, image: str, timeout_s: float
    ) -> GradeReport:
        """Apply `diff` to a fresh copy of the repository, add the hidden tests and run them
        in a fresh sandbox. A failed test is a verdict; a broken sandbox raises SandboxError."""
        ...


@runtime_checkable
class ChecksEnvironment(Protocol):
    """A benchmark whose tasks need more of a worker's sandboxes than Clade's base image (a
    toolchain image, say). Asked on the worker, before a task runs: the service that plans a
    run never talks to a sandbox engine."""

    def check_environment(self, task: Task, backend: SandboxBackend) -> None:
        """Raise `BenchmarkError`, saying what is missing and how to get it, unless `task` can
        run and be graded with `backend`."""
        ...


@runtime_checkable
class BuildsEnvironments(Protocol):
    """A benchmark whose task images are built from the task's own files (Harbor's Dockerfiles),
    not pulled by name: `clade bench prepare` and the worker build them through this."""

    def build_environment(self, task: Task, images: ImageStore, progress: Progress) -> bool:
        """Build `task.image` unless `images` has it; True when it was built. SandboxUnavailable
        (with the build's error) when it cannot be."""
        ...


@runtime_checkable
class DerivesGold(Protocol):
    """A benchmark whose reference solution is a program, not a diff (Harbor's solve.sh): the
    gold diff is what running it in the task's environment changes."""

    def gold_patch(self, task: Task, backend: SandboxBackend, timeout_s: float) -> str: ...


def gold_patch(benchmark: Benchmark, task: Task, backend: SandboxBackend, timeout_s: float) -> str:
    """The task's gold diff: `task.patch`, or the one `DerivesGold` makes."""
    if isinstance(benchmark, DerivesGold):
        return benchmark.gold_patch(task, backend, timeout_s)
    return task.patch


def check_environment(benchmark: Benchmark, tasks: list[Task], backend: SandboxBackend) -> None:
    """`ChecksEnvironment.check_environment` for each of `tasks`, if `benchmark` has one."""
    if isinstance(benchmark, ChecksEnvironment):
        for task in tasks:
            benchmark.check_environment(task, backend)


def find_task(benchmark: Benchmark, instance_id: str) -> Task:
    for task in benchmark.tasks():
        if task.instance_id == instance_id:
            return task
    raise UnknownTask(f"{benchmark.name} has no task {instance_id!r}")


def subset_tasks(benchmark: Benchmark, subset: str) -> list[Task]:
    """The tasks of a named subset, in the subset's order."""
    subsets = benchmark.subsets()
    if subset not in subsets:
        known = ", ".join(sorted(subsets))
        raise UnknownTask(f"{benchmark.name} has no subset {subset!r} (known: {known})")
    by_id = {task.instance_id: task for task in benchmark.tasks()}
    return [by_id[instance_id] for instance_id in subsets[subset]]
