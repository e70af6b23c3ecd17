"""Grading for benchmarks whose tests are pytest tests and whose repository is built on the host.

Steps: apply the agent's diff to a fresh copy of the repository (on the host); put the
files the hidden test patch touches back to their base state and apply that patch;
run the test command in a fresh sandbox with the repository bind-mounted; read each
test's outcome from the JSON that `pytest_plugin.py` writes into a second mount.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ValidationError

from benchmarks.base import GradeReport, Task, TestGroupResult, TestStatus, apply_for_grading, group_reason
from sandbox.base import LABEL_PREFIX, ExecResult, Mount, SandboxBackend, SandboxSpec
from sandbox.ownership import make_world_writable

RESULTS_DIR = "/clade/results"
RESULTS_FILE = "results.json"
PLUGIN_MODULE = "clade_results_plugin"
PLUGIN_SOURCE = Path(__file__).with_name("pytest_plugin.py")
MAX_RESULTS_BYTES = 20_000_000
LOG_TAIL_CHARS = 5_000
# Appended to the task's pytest command. Without the last one, one test module that
# fails to import stops the whole run, and no other test would get a status.
GRADER_PYTEST_ARGS = ("-p", PLUGIN_MODULE, "-p", "no:cacheprovider", "--continue-on-collection-errors")


class PluginResults(BaseModel):
    """What `pytest_plugin.py` writes (its RESULTS_VERSION 1)."""

    version: int
    exit_status: int | None = None
    tests: dict[str, TestStatus]


def grade_pytest(
    task: Task,
    repo: Path,
    diff: str,
    *,
    backend: SandboxBackend,
    image: str,
    timeout_s: float,
    work_dir: Path,
) -> GradeReport:
    """Grade `diff` against `repo`, a fresh copy of the task's base state that this changes.

    `work_dir` is a private scratch folder (it receives the results mount).
    """
    started = time.monotonic()
    refused = apply_for_grading(task, repo, diff, started)
    if refused is not None:
        return refused

    results = work_dir / "results"
    results.mkdir()
    shutil.copyfile(PLUGIN_SOURCE, results / f"{PLUGIN_MODULE}.py")
    # The sandbox runs as an unprivileged user that owns none of these host files.
    make_world_writable(results)
    make_world_writable(repo)
    run = _run_tests(task, repo, results, backend=backend, image=image, timeout_s=timeout_s)
    statuses = read_results(results / RESULTS_FILE)
    report = judge(task, statuses)
    tail = (run.stdout + ("\n" + run.stderr if run.stderr else ""))[-LOG_TAIL_CHARS:]
    reason = report.reason
    if run.timed_out:
        reason = f"the tests timed out after {timeout_s:g}s; {reason}"
    elif not statuses:
        reason = f"no test results (test command exit code {run.exit_code}); {reason}"
    return report.model_copy(
        update={
            "reason": reason,
            "tests_exit_code": None if run.timed_out else run.exit_code,
            "tests_timed_out": run.timed_out,
            "log_tail": tail,
            "duration_s": time.monotonic() - started,
        }
    )


def _run_tests(
    task: Task, repo: Path, results: Path, *, backend: SandboxBackend, image: str, timeout_s: float
) -> ExecResult:
    spec = SandboxSpec(
        image=image,
        mounts=[
            Mount(source=repo, target=task.repo_path, read_only=False),
            Mount(source=results, target=RESULTS_DIR, read_only=False),
        ],
        workdir=task.repo_path,
        labels={f"{LABEL_PREFIX}.purpose": "grade", f"{LABEL_PREFIX}.task": task.instance_id},
    )
    command = [*task.test_command, *GRADER_PYTEST_ARGS]
    env = {
        "PYTHONPATH": RESULTS_DIR,
        "CLADE_RESULTS_FILE": f"{RESULTS_DIR}/{RESULTS_FILE}",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    sandbox = backend.start(spec)
    try:
        return sandbox.exec(command, timeout_s=timeout_s, env=env, cwd=task.repo_path)
    finally:
        sandbox.close()


def read_results(path: Path) -> dict[str, TestStatus]:
    """Per-test statuses from the plugin's file; empty when it is missing or unreadable,
    so that every expected test then counts as missing, hence failed."""
    # The sandbox wrote this file: a symlink would make the host read one of its own files.
    if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_RESULTS_BYTES:
        return {}
    try:
        return PluginResults.model_validate_json(path.read_bytes()).tests
    except ValidationError:
        return {}


def judge(task: Task, statuses: Mapping[str, TestStatus]) -> GradeReport:
    """Resolved iff every FAIL_TO_PASS and every PASS_TO_PASS test passed."""
    fail_to_pass = _group(task.FAIL_TO_PASS, statuses)
    pass_to_pass = _group(task.PASS_TO_PASS, statuses)
    resolved = not fail_to_pass.failure and not pass_to_pass.failure
    return GradeReport(
        instance_id=task.instance_id,
        resolved=resolved,
        patch_applied=True,
        reason=group_reason(task, fail_to_pass, pass_to_pass, resolved=resolved),
        test_statuses=dict(statuses),
        FAIL_TO_PASS=fail_to_pass,
        PASS_TO_PASS=pass_to_pass,
    )


def _group(test_ids: list[str], statuses: Mapping[str, TestStatus]) -> TestGroupResult:
    group = TestGroupResult()
    for test_id in test_ids:
        passed = statuses.get(test_id, TestStatus.MISSING).ok
        (group.success if passed else group.failure).append(test_id)
    return group
