"""Grade a diff the way the SWE-bench harness does, in a fresh sandbox of the instance image.

1. Drop the diff's changes to test files (`patches.graded_patch`).
2. Copy /testbed out of the instance image (with its git history) and apply the rest
   of the diff there, on the host; a diff that does not apply is a verdict.
3. Run the instance's eval script (swebench's `TestSpec.eval_script`: it applies the
   test patch and prints the start and end markers around the test run) in a fresh
   hardened sandbox of the instance image, with that copy mounted at /testbed; stdout
   and stderr go to one log, as in the harness. The script's own exit status is that of
   the `git checkout` it ends with, so the test command's is echoed after the end marker
   (`>>>>> Test Exit Code: N`, as swebench 5.x scripts do; added to scripts without it)
   and read back from the log as `tests_exit_code`.
4. Read the log with swebench's own `get_logs_eval` (per-test statuses, through the
   instance's log parser) and decide with its own `get_eval_report`. A timeout is
   never resolved: the harness raises on one before it grades.

Against forged verdicts (see `pytest_grading.py` for the threat): after step 2, the
diff's changes to test infrastructure are put back (`graded_diff.py`; files the test or
the gold patch change are exempt) and listed with the test files of step 1 as dropped
for grading; non-test code naming the runner's internals is flagged (`runner_tampering`).
For instances run by pytest (test ids `path.py::name`, a `pytest` command in the script),
the eval script also plants must-fail twins of the hidden tests right after the test patch
is applied and loads the grader's results plugin, whose structured report lands in a
watched mount (`pytest_guard.py`): a twin reported wrong, a graded test that the log passes
and pytest's report does not, an exit of 0, a forged or second write, or status lines
pytest cannot have printed (`forged_status_lines`) make the verdict "tampered"; no report
makes it "not resolved". The twins are left out of the statuses. When no hidden test can be
twinned, two arithmetic canaries are appended to the first FAIL_TO_PASS file instead (the
log is then the only source of statuses, as in the official harness). Autoloaded plugins
stay on, since some repositories' tests need theirs. Instances whose test command is Django's
`tests/runtests.py` or sympy's `bin/test` get a must-fail and a must-pass canary in a file the
command names and checks of that runner's log (`runner_guard.py`, `runner_logs.py`).
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.base import GradeReport, TestGroupResult, TestStatus, dropped_note, group_reason, unapplied
from benchmarks.canaries import Canaries, check, write_canaries
from benchmarks.diffs import touched_paths
from benchmarks.gitops import apply_patch
from benchmarks.graded_diff import drop_test_infrastructure
from benchmarks.must_fail import NO_TWINS_NOTE
from benchmarks.runner_tampering import runner_tampering, tampering_note
from benchmarks.swebench import pytest_guard, runner_guard
from benchmarks.swebench.harness import Harness
from benchmarks.swebench.patches import graded_patch
from benchmarks.swebench.pytest_guard import RESULTS_MOUNT, START_MARKER, Guard
from benchmarks.swebench.tasks import EVAL_DIR, EVAL_SCRIPT, SWEbenchTask
from benchmarks.swebench.testbed import export_base
from benchmarks.write_watch import Change, WriteWatch
from sandbox.base import LABEL_PREFIX, Mount, SandboxBackend, SandboxSpec
from sandbox.ownership import give_to_sandbox_user

MODEL_NAME = "clade"
LOG_NAME = "test_output.txt"
MAX_LOG_BYTES = 64_000_000
LOG_TAIL_CHARS = 5_000
END_MARKER = ">>>>> End Test Output"
_CANARY_EOF = "CLADE_CANARIES_EOF"
_STATUS_LINE = re.compile(r"^(PASSED|FAILED) (\S+)")
_PYTEST_SESSION_START = re.compile(r"^=+ test session starts =+$")
_PYTEST_FINAL_LINE = re.compile(r"^=+ .* in [0-9.]+ ?s(econds)?\b.*=+$")
EXIT_MARKER = ">>>>> Test Exit Code"  # swebench's TEST_EXIT_CODE
_EXIT_VAR = "CLADE_TEST_EXIT_CODE"
_EXIT_LINE = re.compile(rf"^{re.escape(EXIT_MARKER)}:\s*(-?\d+)\s*$", re.MULTILINE)
# What the harness appends to the log of a run it stopped (run_evaluation.run_instance).
TIMEOUT_LINE = "\n\nTimeout error: {timeout} seconds exceeded."
EVAL_ENV = {
    "HOME": "/tmp",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONNOUSERSITE": "1",  # no start-up code from a user site folder
    # No network: pip in an eval script fails at once instead of retrying.
    "PIP_NO_INDEX": "1",
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    # The repository copy belongs to the worker's user, the eval script runs as uid 1000.
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "safe.directory",
    "GIT_CONFIG_VALUE_0": "*",
}


@dataclass(frozen=True)
class Resources:
    """Limits of the grading sandbox."""

    memory_mb: int = 4096
    cpus: float = 1.0
    pids: int = 1024


@dataclass(frozen=True)
class EvalRun:
    """The combined output of one eval script run."""

    log: str
    exit_code: int
    timed_out: bool
    truncated: bool
    changes: tuple[Change, ...] = ()  # what the results folder saw, when it was mounted


def grade_task(
    task: SWEbenchTask,
    diff: str,
    *,
    harness: Harness,
    backend: SandboxBackend,
    timeout_s: float,
    resources: Resources,
) -> GradeReport:
    started = time.monotonic()
    graded = graded_patch(diff, test_patch=task.test_patch, gold_patch=task.patch)
    dropped = f"; changes to test files left out: {', '.join(graded.dropped)}" if graded.dropped else ""
    left_out = dict.fromkeys(graded.dropped, "a test file: the hidden tests replace or ignore it")
    with tempfile.TemporaryDirectory(prefix="clade-swebench-", ignore_cleanup_errors=True) as tmp:
        work = Path(tmp)
        repo = export_base(backend.images, task, work / "export")
        applied = apply_patch(repo, graded.patch)
        if not applied.applied:
            return unapplied(task, applied.error, started, dropped)
        exempt = {*touched_paths(task.test_patch), *touched_paths(task.patch)}
        infrastructure = drop_test_infrastructure(repo, graded.patch, keep=exempt)
        left_out |= infrastructure
        dropped += dropped_note(infrastructure)
        flags = runner_tampering(graded.patch, left_out)
        script = with_exit_marker(harness.test_spec(task.instance()).eval_script)
        eval_dir = work / "eval"
        eval_dir.mkdir()
        canaries, guard, note = None, None, ""
        runner_plan, runner_canaries = None, None
        canary_file = pytest_canary_file(task, script)
        if canary_file is not None:
            prepared = pytest_guard.prepare(task, repo, script, eval_dir, work)
            if prepared is not None:
                script, guard = prepared
            else:
                canaries, code = write_canaries(canary_file, task.test_patch)
                script = with_canaries(script, canary_file, code)
                note = f"; {NO_TWINS_NOTE}"
        else:
            runner_plan = runner_guard.plan(script, task.test_patch, repo)
            if runner_plan is not None:
                context = task.test_patch + _text(repo, runner_plan)
                runner_canaries, code = runner_guard.write(runner_plan, context)
                script = with_canaries(script, runner_plan.test_file, code)
                note = f"; {runner_guard.note(runner_plan)}"
        (eval_dir / "eval.sh").write_text(script)
        os.chmod(eval_dir, 0o755)
        os.chmod(eval_dir / "eval.sh", 0o644)
        give_to_sandbox_user(repo)
        run = run_eval_script(
            task,
            repo,
            eval_dir,
            backend=backend,
            timeout_s=timeout_s,
            resources=resources,
            results=guard.results if guard is not None else None,
        )
        log_path = work / LOG_NAME
        log_path.write_text(run.log)
        report = verdict(task, harness, log_path, model_patch=graded.patch, timed_out=run.timed_out)
        exit_code = None if run.timed_out else tests_exit_code(run.log)
        tampered, untrusted = None, None
        if canaries is not None and not run.timed_out:
            tampered = canary_evidence(canaries, report.test_statuses, exit_code, run.log)
            report = report.model_copy(update={"test_statuses": canaries.without(report.test_statuses)})
        if runner_plan is not None and runner_canaries is not None and not run.timed_out:
            statuses = report.test_statuses
            tampered, untrusted = runner_guard.evidence(
                runner_canaries, statuses, exit_code, run.log, runner_plan.runs
            )
            report = report.model_copy(update={"test_statuses": runner_canaries.without(statuses)})
        if guard is not None and not run.timed_out:
            tampered, untrusted = guarded_evidence(guard, task, report.test_statuses, run, exit_code)
            report = report.model_copy(
                update={"test_statuses": guard.must_fail.without(report.test_statuses)}
            )
    reason = report.reason
    if tampered is not None:
        reason = f"tampered: {tampered}"
    elif run.timed_out:
        reason = f"the tests timed out after {timeout_s:g}s; {reason}"
    elif untrusted is not None:
        reason = f"not resolved: {untrusted}; swebench's reading of the log: {reason}"
    elif run.truncated:
        reason = f"{reason}; the test log was cut at {MAX_LOG_BYTES} bytes"
    return report.model_copy(
        update={
            "resolved": report.resolved and tampered is None and untrusted is None,
            "reason": reason + note + dropped + tampering_note(flags),
            "tests_exit_code": exit_code,
            "log_tail": run.log[-LOG_TAIL_CHARS:],
            "duration_s": time.monotonic() - started,
            "dropped_for_grading": left_out,
            "runner_tampering": flags,
            "tampered": tampered,
        }
    )


def guarded_evidence(
    guard: Guard, task: SWEbenchTask, statuses: dict[str, TestStatus], run: EvalRun, exit_code: int | None
) -> tuple[str | None, str | None]:
    """(tampered, untrusted) for a run with twins and pytest's structured report; the log's
    own checks (`forged_status_lines`) too."""
    printed = forged_status_lines(run.log)
    if printed is not None:
        return printed, None
    graded = [*task.FAIL_TO_PASS, *task.PASS_TO_PASS]
    judged = pytest_guard.judge(guard, graded, statuses, list(run.changes), exit_code, run.log)
    return judged.tampered, judged.untrusted


def _text(repo: Path, found: runner_guard.Plan) -> str:
    """The canary file's text in the graded copy ("" when the test patch creates it)."""
    path = repo / found.test_file
    return path.read_text(errors="replace") if path.is_file() and not path.is_symlink() else ""


def pytest_canary_file(task: SWEbenchTask, script: str) -> str | None:
    """The test file that gets the canaries, for instances that pytest runs; else None."""
    if START_MARKER not in script or "pytest" not in script or not task.FAIL_TO_PASS:
        return None
    path, sep, _ = task.FAIL_TO_PASS[0].partition("::")
    return path if sep and path.endswith(".py") and "'" not in path else None


def with_canaries(script: str, test_file: str, code: str) -> str:
    """`script` appending `code` to `test_file` just before its start marker (after the test
    patch is applied)."""
    lines = script.split("\n")
    for i, line in enumerate(lines):
        if START_MARKER in line:
            append = [f"cat >> '{test_file}' <<'{_CANARY_EOF}'", *code.split("\n"), _CANARY_EOF]
            return "\n".join([*lines[:i], *append, *lines[i:]])
    return script


def canary_evidence(
    canaries: Canaries, statuses: dict[str, TestStatus], exit_code: int | None, log: str
) -> str | None:
    """Why the log of a pytest run shows tampering: a canary wrong or missing, an exit code
    of 0, or status lines pytest did not print (see `forged_status_lines`)."""
    wrong = check(canaries, statuses)
    if wrong is not None:
        return wrong
    if exit_code == 0:
        return f"the test command exited 0, although the must-fail canary {canaries.must_fail} ran"
    return forged_status_lines(log)


def forged_status_lines(log: str) -> str | None:
    """Status lines that pytest's `-rA` summary cannot have printed: one after pytest's final
    line ("=== 1 failed, 9 passed in 0.12s ==="), or a test both FAILED and PASSED. With the
    must-fail canary, a run always has a FAILED line, so swebench 5.x's own check (a non-zero
    exit with no failure in the log) no longer catches PASSED lines printed after pytest's."""
    section = log.split(START_MARKER, 1)[-1].split(END_MARKER, 1)[0]
    # One pytest session per "test session starts" line (a test command may run several).
    sessions: list[list[str]] = [[]]
    for line in section.splitlines():
        if _PYTEST_SESSION_START.match(line.strip()):
            sessions.append([])
        sessions[-1].append(line)
    for lines in sessions:
        finals = [i for i, line in enumerate(lines) if _PYTEST_FINAL_LINE.match(line.strip())]
        late = [line for line in lines[finals[-1] + 1 :] if _STATUS_LINE.match(line)] if finals else []
        if late:
            return f"status lines after pytest's final summary: {late[0][:200]!r}"
        seen: dict[str, set[str]] = {}
        for line in lines:
            match = _STATUS_LINE.match(line)
            if match:
                seen.setdefault(match.group(2), set()).add(match.group(1))
        both = sorted(test for test, found in seen.items() if {"PASSED", "FAILED"} <= found)
        if both:
            return f"the log reports {both[0]} both FAILED and PASSED"
    return None


def run_eval_script(
    task: SWEbenchTask,
    repo: Path,
    eval_dir: Path,
    *,
    backend: SandboxBackend,
    timeout_s: float,
    resources: Resources,
    results: Path | None = None,
) -> EvalRun:
    """Run `eval_dir/eval.sh` in a fresh sandbox of the task's image, `repo` at its repo path
    (and the watched folder `results` at RESULTS_MOUNT, when given)."""
    mounts = [
        Mount(source=repo, target=task.repo_path, read_only=False),
        Mount(source=eval_dir, target=EVAL_DIR, read_only=True),
    ]
    if results is not None:
        mounts.append(Mount(source=results, target=RESULTS_MOUNT, read_only=False))
    spec = SandboxSpec(
        image=task.image,
        mounts=mounts,
        workdir=task.repo_path,
        env=EVAL_ENV,
        memory_mb=resources.memory_mb,
        cpus=resources.cpus,
        pids=resources.pids,
        output_cap_bytes=MAX_LOG_BYTES,
        labels={f"{LABEL_PREFIX}.purpose": "grade", f"{LABEL_PREFIX}.task": task.instance_id},
    )
    with WriteWatch(results if results is not None else eval_dir) as watch:
        sandbox = backend.start(spec)
        try:
            # One stream, as `docker exec` gives the harness: `set -x` traces go to stderr.
            result = sandbox.exec(
                ["/bin/bash", "-c", f"exec /bin/bash {EVAL_SCRIPT} 2>&1"],
                timeout_s=timeout_s,
                cwd=task.repo_path,
            )
        finally:
            sandbox.close()  # every process it left is gone before the folder is judged
        changes = tuple(watch.changes()) if results is not None else ()
    log = result.stdout + result.stderr
    if result.timed_out:
        log += TIMEOUT_LINE.format(timeout=f"{timeout_s:g}")
    return EvalRun(
        log=log,
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        truncated=result.output_truncated,
        changes=changes,
    )


def with_exit_marker(script: str) -> str:
    """`script` echoing its test command's exit status after the end marker, unless it does."""
    if EXIT_MARKER in script:
        return script
    lines = script.split("\n")
    for i, line in enumerate(lines):
        if END_MARKER in line:
            marked = [f"{_EXIT_VAR}=$?", line, f'echo "{EXIT_MARKER}: ${_EXIT_VAR}"']
            return "\n".join([*lines[:i], *marked, *lines[i + 1 :]])
    return script  # no end marker: the exit status stays unknown


def tests_exit_code(log: str) -> int | None:
    """The test command's exit status as the eval script echoed it (the last such line)."""
    found = _EXIT_LINE.findall(log)
    return int(found[-1]) if found else None


def verdict(
    task: SWEbenchTask, harness: Harness, log_path: Path, *, model_patch: str, timed_out: bool = False
) -> GradeReport:
    """The swebench package's verdict on one test log, as a GradeReport."""
    test_spec = harness.test_spec(task.instance())
    statuses, gradable = harness.status_map(test_spec, log_path)
    prediction = {
        "instance_id": task.instance_id,
        "model_name_or_path": MODEL_NAME,
        "model_patch": model_patch,
    }
    report = harness.report(test_spec, prediction, log_path)
    groups = report.get("tests_status") or {}
    fail_to_pass = _group(groups.get("FAIL_TO_PASS"), task.FAIL_TO_PASS)
    pass_to_pass = _group(groups.get("PASS_TO_PASS"), task.PASS_TO_PASS)
    resolved = bool(report["resolved"]) and not timed_out
    if resolved or gradable:
        reason = group_reason(task, fail_to_pass, pass_to_pass, resolved=resolved)
    else:
        reason = (
            "not resolved: swebench finds no gradable test results in the log (the tests errored or did "
            "not run, or the log contradicts the test command's exit code)"
        )
        if report.get("infra_failure_reason"):
            reason += f"; it looks like an environment failure: {report['infra_failure_reason']}"
    return GradeReport(
        instance_id=task.instance_id,
        resolved=resolved,
        patch_applied=True,
        reason=reason,
        test_statuses={test: _status(status) for test, status in statuses.items()},
        FAIL_TO_PASS=fail_to_pass,
        PASS_TO_PASS=pass_to_pass,
        tests_timed_out=timed_out,
    )


def _group(result: dict[str, list[str]] | None, expected: list[str]) -> TestGroupResult:
    if result is None:  # no gradable log: every expected test failed
        return TestGroupResult(failure=list(expected))
    return TestGroupResult(success=list(result.get("success", [])), failure=list(result.get("failure", [])))


def _status(value: str) -> TestStatus:
    known = {status.value for status in TestStatus}
    return TestStatus(value) if value in known else TestStatus.ERROR
