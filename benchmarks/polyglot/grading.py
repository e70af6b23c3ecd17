"""Grading a polyglot exercise: the agent's diff, the original tests, the language's test command.

Steps, on a fresh copy of the exercise's repository: apply the diff; put every file the
exercise ships, except the solution files, back as it was (so editing, deleting or
replacing the tests or the build files changes nothing); remove the files the agent
added that a test runner would pick up; run the test command in a fresh sandbox with
the repository bind-mounted. Resolved iff the command exits 0 in time.
"""

from __future__ import annotations

import time
from pathlib import Path

from pydantic import BaseModel

from benchmarks.base import GradeReport, Task, TestGroupResult, TestStatus, unapplied
from benchmarks.gitops import apply_patch, git_ok, reset_paths
from benchmarks.polyglot.languages import SPECS, LanguageSpec, sandbox_env
from benchmarks.polyglot.layout import Exercise
from sandbox.base import LABEL_PREFIX, ExecResult, Mount, SandboxBackend, SandboxSpec
from sandbox.ownership import make_world_writable

LOG_TAIL_CHARS = 5_000
GRADE_TMPFS_MB = 1024
# C++'s bank-account test starts 1,000 threads at once; still a bound on a fork bomb.
GRADE_PIDS = 2048


class Protection(BaseModel):
    """What grading undid of the agent's diff."""

    restored: list[str]  # shipped files put back as they were
    removed: list[str]  # added files that a test runner would pick up


def grade_exercise(
    task: Task,
    exercise: Exercise,
    repo: Path,
    diff: str,
    *,
    backend: SandboxBackend,
    image: str,
    timeout_s: float,
) -> GradeReport:
    """Grade `diff` against `repo`, a fresh copy of the exercise's repository that this changes."""
    started = time.monotonic()
    applied = apply_patch(repo, diff)
    if not applied.applied:
        return unapplied(task, applied.error, started)
    spec = SPECS[exercise.language]
    protection = protect(repo, exercise, spec)
    make_world_writable(repo)  # the sandbox user owns none of these host files
    run = _run_tests(task, repo, spec, backend=backend, image=image, timeout_s=timeout_s)
    passed = run.exit_code == 0 and not run.timed_out
    tests = list(task.FAIL_TO_PASS)
    status = TestStatus.PASSED if passed else TestStatus.FAILED
    command = " ".join(task.test_command)
    if passed:
        reason = f"resolved: `{command}` exits 0"
    elif run.timed_out:
        reason = f"not resolved: the tests timed out after {timeout_s:g}s"
    else:
        reason = f"not resolved: `{command}` exits with code {run.exit_code}"
    if protection.restored:
        reason += f"; restored files the patch changed: {', '.join(protection.restored)}"
    if protection.removed:
        reason += f"; removed added files a test runner would use: {', '.join(protection.removed)}"
    log = run.stdout + ("\n" + run.stderr if run.stderr else "")
    return GradeReport(
        instance_id=task.instance_id,
        resolved=passed,
        patch_applied=True,
        reason=reason,
        test_statuses={test: status for test in tests},
        FAIL_TO_PASS=TestGroupResult(success=tests if passed else [], failure=[] if passed else tests),
        tests_exit_code=None if run.timed_out else run.exit_code,
        tests_timed_out=run.timed_out,
        log_tail=log[-LOG_TAIL_CHARS:],
        duration_s=time.monotonic() - started,
    )


def protect(repo: Path, exercise: Exercise, spec: LanguageSpec) -> Protection:
    """Undo what the diff did to anything but the solution and the agent's own new files."""
    tracked = _paths(git_ok(repo, "ls-files", "-z"))
    changed = _paths(git_ok(repo, "diff", "--name-only", "--no-renames", "-z", "HEAD"))
    added = _paths(git_ok(repo, "ls-files", "--others", "-z"))
    solution = set(exercise.solution)
    restored = sorted(path for path in changed if path in tracked and path not in solution)
    removed = sorted(path for path in added if spec.is_runner_file(path))
    # Through git only: it does not follow a symlink the diff put in place of a folder.
    reset_paths(repo, [*restored, *removed])
    if spec.unskip is not None:
        for name in exercise.tests:
            path = repo / name
            path.write_text(spec.unskip(path.read_text()))
    return Protection(restored=restored, removed=removed)


def _run_tests(
    task: Task, repo: Path, spec: LanguageSpec, *, backend: SandboxBackend, image: str, timeout_s: float
) -> ExecResult:
    sandbox_spec = SandboxSpec(
        image=image,
        mounts=[Mount(source=repo, target=task.repo_path, read_only=False)],
        workdir=task.repo_path,
        # Go, cargo, CMake and javac build into /tmp and run what they built; the build
        # trees of the larger Rust crates need more room than the default.
        tmpfs_exec=True,
        tmpfs_mb=GRADE_TMPFS_MB,
        pids=GRADE_PIDS,
        labels={f"{LABEL_PREFIX}.purpose": "grade", f"{LABEL_PREFIX}.task": task.instance_id},
    )
    sandbox = backend.start(sandbox_spec)
    try:
        return sandbox.exec(task.test_command, timeout_s=timeout_s, env=sandbox_env(spec), cwd=task.repo_path)
    finally:
        sandbox.close()


def _paths(output: str) -> set[str]:
    return {path for path in output.split("\0") if path}
