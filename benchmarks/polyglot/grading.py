"""Grading a polyglot exercise: the agent's diff, the original tests, the language's test command.

Steps, on a fresh copy of the exercise's repository: apply the diff; put every file the
exercise ships, except the solution files, back as it was (so editing, deleting or
replacing the tests or the build files changes nothing); remove the files the agent
added that a test runner would pick up; run the test command in a fresh sandbox with
the repository bind-mounted. All of these are listed as dropped for grading.

Python runs under the pytest grader's guards (`pytest_grading.run_guarded_pytest`: the
test-infrastructure rules of `graded_diff.py`, canaries, the results plugin, exit status
and one-write checks): resolved iff that run is trusted and every test of the exercise's
test files passed.

The other languages are never resolved by an exit code alone: must-fail twins are
planted among the restored tests (`twins.py`), the test command writes its runner's own
structured report into a fresh results folder that the host watches (`languages.py`,
`reports.py`), and `verdict.py` decides from the report, the twins and the exit status
together. The restored test and build files (`package.json`, `Cargo.toml`,
`CMakeLists.txt`, `go.mod`, ...) and removed runner files (`*_test.go`, `build.rs`,
`jest.config.*`, ...) keep the hidden tests and the runner as shipped.
"""

from __future__ import annotations

import time
from pathlib import Path

from pydantic import BaseModel

from benchmarks.base import GradeReport, Task, TestGroupResult, TestStatus, unapplied
from benchmarks.gitops import apply_patch, git_ok, reset_paths
from benchmarks.graded_diff import drop_test_infrastructure
from benchmarks.polyglot.languages import RESULTS_DIR, SPECS, LanguageSpec, sandbox_env
from benchmarks.polyglot.layout import Exercise
from benchmarks.polyglot.lexer import flavor_of
from benchmarks.polyglot.reports import report_log
from benchmarks.polyglot.twins import Planted, plant_twins
from benchmarks.polyglot.verdict import Verdict, judge_run
from benchmarks.pytest_grading import GuardedRun, run_guarded_pytest
from benchmarks.write_watch import WriteWatch
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
    work_dir: Path,
) -> GradeReport:
    """Grade `diff` against `repo`, a fresh copy of the exercise's repository that this changes;
    `work_dir` is a private scratch folder."""
    started = time.monotonic()
    applied = apply_patch(repo, diff)
    if not applied.applied:
        return unapplied(task, applied.error, started)
    spec = SPECS[exercise.language]
    dropped: dict[str, str] = {}
    if exercise.language == "python":
        dropped = drop_test_infrastructure(repo, diff, keep=exercise.solution)
    protection = protect(repo, exercise, spec)
    for path in protection.restored:
        dropped.setdefault(path, "a file the exercise ships, not its solution: restored as shipped")
    for path in protection.removed:
        dropped.setdefault(path, "an added file the test runner would pick up")
    make_world_writable(repo)  # the sandbox user owns none of these host files
    command = " ".join(task.test_command)
    tests = list(task.FAIL_TO_PASS)
    tampered = None
    report_output = ""
    if exercise.language == "python":
        guarded = _run_python(
            task, exercise, repo, work_dir, backend=backend, image=image, timeout_s=timeout_s
        )
        run, tampered = guarded.run, guarded.tampered
        by_file = _file_statuses(tests, guarded.statuses)
        trusted = tampered is None and guarded.untrusted is None
        passed = trusted and all(status is TestStatus.PASSED for status in by_file.values())
        if passed:
            reason = f"resolved: every test of `{command}` passes"
        elif tampered is not None:
            reason = f"tampered: {tampered}"
        elif guarded.untrusted is not None:
            reason = f"not resolved: {guarded.untrusted}"
        else:
            reason = f"not resolved: tests of `{command}` fail"
        statuses = by_file if trusted else {test: TestStatus.FAILED for test in tests}
    else:
        planted = plant_twins(flavor_of(spec.name), repo, list(exercise.tests))
        make_world_writable(repo)
        run, verdict = _run_with_report(
            task,
            exercise,
            repo,
            spec,
            planted,
            backend=backend,
            image=image,
            timeout_s=timeout_s,
            work_dir=work_dir,
        )
        passed, tampered = verdict.resolved, verdict.tampered
        reports = [work_dir / "results" / name for name in spec.reports(list(exercise.tests))]
        report_output = report_log(spec.name, reports, LOG_TAIL_CHARS)
        reason = _reason(command, verdict, planted)
        statuses = _compiled_statuses(tests, verdict, planted)
    if run.timed_out:
        reason = f"not resolved: the tests timed out after {timeout_s:g}s"
    if protection.restored:
        reason += f"; restored files the patch changed: {', '.join(protection.restored)}"
    if protection.removed:
        reason += f"; removed added files a test runner would use: {', '.join(protection.removed)}"
    extra = sorted(set(dropped) - {*protection.restored, *protection.removed})
    if extra:
        reason += f"; left out of grading as test infrastructure: {', '.join(extra)}"
    log = run.stdout + ("\n" + run.stderr if run.stderr else "") + report_output
    return GradeReport(
        instance_id=task.instance_id,
        resolved=passed,
        patch_applied=True,
        reason=reason,
        test_statuses=statuses,
        FAIL_TO_PASS=TestGroupResult(success=tests if passed else [], failure=[] if passed else tests),
        tests_exit_code=None if run.timed_out else run.exit_code,
        tests_timed_out=run.timed_out,
        log_tail=log[-LOG_TAIL_CHARS:],
        duration_s=time.monotonic() - started,
        dropped_for_grading=dropped,
        tampered=tampered,
    )


def _reason(command: str, verdict: Verdict, planted: Planted) -> str:
    if verdict.tampered is not None:
        reason = f"tampered: {verdict.tampered}"
    elif verdict.untrusted is not None:
        reason = f"not resolved: {verdict.untrusted}"
    elif verdict.resolved:
        count = sum(status is TestStatus.PASSED for status in verdict.statuses.values())
        reason = f"resolved: the runner's report shows all {count} tests of `{command}` passed"
        if skipped := len(verdict.statuses) - count:
            reason += f" ({skipped} more reported skipped, as the shipped files skip them)"
        if planted.fallback():
            reason += " and its must-fail fallback test failed"
        elif planted.twins:
            reason += f" and its {len(planted.twins)} must-fail twins failed"
    elif not verdict.statuses:
        reason = "not resolved: the runner's report shows no test"
    else:
        shown = ", ".join(f"{name} ({verdict.statuses[name].value.lower()})" for name in verdict.failing[:5])
        more = len(verdict.failing) - 5
        reason = f"not resolved: tests of `{command}` did not pass: {shown}"
        reason += f" and {more} more" if more > 0 else ""
    if planted.fallback():
        notes = "; ".join(planted.notes)
        reason += f"; no twin could be planted ({notes}): a fallback must-fail test instead"
    elif not planted.twins:
        notes = "; ".join(planted.notes) or "no test file to plant it in"
        reason += f"; no twin could be planted ({notes}): the verdict rests on the runner's report alone"
    return reason


def _compiled_statuses(tests: list[str], verdict: Verdict, planted: Planted) -> dict[str, TestStatus]:
    """Each test file's status (FAIL_TO_PASS names the files) and each of its tests' as
    `file::test`; every file FAILED when the run is not trusted."""
    trusted = verdict.tampered is None and verdict.untrusted is None
    out: dict[str, TestStatus] = {}
    for test_file in tests:
        ok = trusted and verdict.resolved
        out[test_file] = TestStatus.PASSED if ok else TestStatus.FAILED
    if not trusted:
        return out
    owner = {name: test_file for test_file, names in planted.expected.items() for name in names}
    for name, status in verdict.statuses.items():
        out[f"{owner.get(name, tests[0])}::{name}"] = status
    return out


def _file_statuses(test_files: list[str], statuses: dict[str, TestStatus]) -> dict[str, TestStatus]:
    """Each test file's status, as pytest's exit status 0 would say: FAILED if any of its tests
    failed or errored (a module that does not import included), or if no test passed at all;
    a helper module with no tests of its own (paasio's test_utils.py) passes."""
    any_passed = any(status.ok for status in statuses.values())
    by_file = {}
    for test_file in test_files:
        own = [status for node, status in statuses.items() if node.split("::", 1)[0] == test_file]
        ok = any_passed and all(status.ok or status is TestStatus.SKIPPED for status in own)
        by_file[test_file] = TestStatus.PASSED if ok else TestStatus.FAILED
    return by_file


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


def _grading_spec(task: Task, repo: Path, image: str) -> SandboxSpec:
    return SandboxSpec(
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


def _run_python(
    task: Task,
    exercise: Exercise,
    repo: Path,
    work_dir: Path,
    *,
    backend: SandboxBackend,
    image: str,
    timeout_s: float,
) -> GuardedRun:
    return run_guarded_pytest(
        _grading_spec(task, repo, image),
        task.test_command,
        repo=repo,
        canary_file=exercise.tests[0],
        work_dir=work_dir,
        backend=backend,
        timeout_s=timeout_s,
        env=sandbox_env(SPECS[exercise.language]),
    )


def _run_with_report(
    task: Task,
    exercise: Exercise,
    repo: Path,
    spec: LanguageSpec,
    planted: Planted,
    *,
    backend: SandboxBackend,
    image: str,
    timeout_s: float,
    work_dir: Path,
) -> tuple[ExecResult, Verdict]:
    """Run the graded command with a fresh, watched results folder mounted; judge what it left."""
    assert spec.graded_command is not None
    tests = list(exercise.tests)
    results = work_dir / "results"
    results.mkdir()
    make_world_writable(results)  # the sandbox user owns none of these host files
    base = _grading_spec(task, repo, image)
    graded = base.model_copy(
        update={"mounts": [*base.mounts, Mount(source=results, target=RESULTS_DIR, read_only=False)]}
    )
    with WriteWatch(results) as watch:
        sandbox = backend.start(graded)
        try:
            run = sandbox.exec(
                spec.graded_command(tests), timeout_s=timeout_s, env=sandbox_env(spec), cwd=task.repo_path
            )
        finally:
            sandbox.close()  # every process it left is gone before the folder is judged
        changes = watch.changes()
    return run, judge_run(spec, tests, run, results, changes, planted)


def _paths(output: str) -> set[str]:
    return {path for path in output.split("\0") if path}
