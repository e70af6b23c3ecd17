"""Grading for benchmarks whose tests are pytest tests and whose repository is built on the host,
and the guards that keep an agent from forging the verdict (also used by Polyglot's Python).

Steps: apply the agent's diff to a fresh copy of the repository (on the host), leaving
out what it did to test infrastructure (`graded_diff.py`); put the files the hidden test
patch touches back to their base state and apply that patch; plant the must-fail twins; run the
test command in a fresh sandbox with the repository bind-mounted; read each test's
outcome from the JSON that `pytest_plugin.py` writes into a second mount.

The agent's code runs inside the test process, so whatever the plugin can do, that code
can do too: it can patch pytest's reports, rewrite the results, or end the process. No
file or secret inside that process is out of its reach. The grader therefore trusts
nothing the process says about itself until it agrees with what the process cannot
control, and calls every disagreement "tampered" (never resolved, with the evidence):

1. Infrastructure out: conftest.py, pytest/tox/setup.cfg/pyproject test settings, .pth,
   sitecustomize, entry points, bytecode and modules shadowing the standard library or
   pytest are left out of the graded diff and listed (`dropped_for_grading`).
2. Isolation: pytest runs with `PYTEST_DISABLE_PLUGIN_AUTOLOAD=1` (these tasks need no
   installed plugin), no user site (`PYTHONNOUSERSITE`), no bytecode written, no cache
   provider, `PYTEST_ADDOPTS` empty; the plugin and the grading file come from a
   read-only mount, and are loaded before any conftest or test module.
3. Must-fail twins (`twins.py`, `must_fail.py`), the main defence against code that
   rewrites outcomes in the process (its reports, `Function.runtest`, unittest's result):
   up to eight copies of real hidden tests (the graded ones first: FAIL_TO_PASS, then
   PASS_TO_PASS; one per hidden test file first) under fresh names, at random places among
   the file's tests, each with one expected value perturbed, so that only the right answer
   tells them from the real tests. A twin reported passed (with its original, or with a
   random value no run can produce), skipped while its original passed, or missing from a
   file that was collected is tampering. The real tests that pass are the must-pass
   evidence. When no hidden test can be twinned, the arithmetic canaries
   (`canaries.py`) stand in, and the reason says so.
4. The runner's own exit status: the must-fail twins make an honest run exit 1, so an
   exit of 0 (a runner cut short with `os._exit(0)`, or whose outcome was rewritten) is
   tampering; so is a results file whose session exit status differs from the process's
   (unless the process was killed by a signal, e.g. out of memory: then it is only
   untrusted, "not resolved").
5. One write: the results folder is watched from the host (inotify, `write_watch.py`)
   until the sandbox is gone: the results file must be created and written once, and
   nothing else may appear there. Rewriting it afterwards (atexit, a leftover process)
   is tampering, and the results file must carry the grading's nonce (stale or
   pre-planted files fail). The nonce is readable by the code under test: it proves
   freshness, not authorship.
6. No results is no verdict: a missing or unreadable file is "not resolved" (never parsed
   from stdout, whatever it printed).

7. Flags (`runner_tampering.py`): the diff's non-test code that names pytest's or
   unittest's internals, tracing hooks, the process's exit path or the grader's files is
   listed on the verdict (`runner_tampering`) and in its reason; a flag is not a verdict.

What remains possible: a generic forgery (swallow every failure, rewrite every report,
fail a random share) is caught by the twins; telling a twin from its original takes the
right answer, or an attack aimed at this grader: one that compares the test files with
the repository's history (a twin of a PASS_TO_PASS test is new there, its original is
not) and lets the new copies fail. Such a diff names the runner's internals, is flagged,
and is recorded with every evaluation. Code whose state leaks between tests can make a
twin disturb a real test; `clade bench check` shows it (gold must still resolve).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ValidationError

from benchmarks.base import (
    GradeReport,
    Task,
    TestGroupResult,
    TestStatus,
    apply_for_grading,
    dropped_note,
    group_reason,
)
from benchmarks.canaries import Canaries, CanaryError
from benchmarks.graded_diff import GRADER_MODULES
from benchmarks.must_fail import MustFail, plant_must_fail
from benchmarks.runner_tampering import runner_tampering, tampering_note
from benchmarks.write_watch import Change, WriteWatch
from sandbox.base import LABEL_PREFIX, ExecResult, Mount, SandboxBackend, SandboxSpec
from sandbox.hostfiles import read_regular_file
from sandbox.ownership import make_world_writable

RESULTS_DIR = "/clade/results"
GRADER_DIR = "/clade/grader"
RESULTS_FILE = "results.json"
GRADING_FILE = "grading.json"
PLUGIN_MODULE = "clade_results_plugin"
assert PLUGIN_MODULE in GRADER_MODULES  # graded_diff drops a module shadowing it
PLUGIN_SOURCE = Path(__file__).with_name("pytest_plugin.py")
RESULTS_VERSION = 2
MAX_RESULTS_BYTES = 20_000_000
LOG_TAIL_CHARS = 5_000
PYTEST_TESTS_FAILED = 1  # pytest's ExitCode.TESTS_FAILED
PYTEST_LAST_EXIT_CODE = 5  # pytest's own exit codes are 0-5 (ExitCode); others are not its verdicts
# Appended to the task's pytest command. Without `--continue-on-collection-errors`, one
# test module that fails to import stops the whole run, and no other test would get a
# status; `--maxfail=0` undoes a `-x` (the must-fail canary would stop the run).
GRADER_PYTEST_ARGS = (
    "-p",
    PLUGIN_MODULE,
    "-p",
    "no:cacheprovider",
    "--continue-on-collection-errors",
    "--maxfail=0",
)
GRADER_ENV = {
    "PYTHONPATH": GRADER_DIR,
    "CLADE_GRADING_FILE": f"{GRADER_DIR}/{GRADING_FILE}",
    "CLADE_RESULTS_FILE": f"{RESULTS_DIR}/{RESULTS_FILE}",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONNOUSERSITE": "1",
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    "PYTEST_ADDOPTS": "",
}


class PluginResults(BaseModel):
    """What `pytest_plugin.py` writes (its RESULTS_VERSION)."""

    version: int
    nonce: str = ""
    exit_status: int | None = None
    tests: dict[str, TestStatus]


@dataclass(frozen=True)
class GuardedRun:
    """One guarded pytest run: the real tests' statuses, and whether they can be trusted."""

    run: ExecResult
    statuses: dict[str, TestStatus]  # the real tests only (twins and canaries removed)
    tampered: str | None  # evidence of forgery; the statuses are then worthless
    untrusted: str | None  # why there are no usable statuses, without forgery (a timeout...)
    must_fail_note: str = ""  # "" with twins; why arithmetic canaries stood in for them

    @property
    def log(self) -> str:
        return self.run.stdout + ("\n" + self.run.stderr if self.run.stderr else "")


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

    `work_dir` is a private scratch folder (it receives the grader's and the results mounts).
    """
    started = time.monotonic()
    refused, dropped = apply_for_grading(task, repo, diff, started)
    if refused is not None:
        return refused
    spec = SandboxSpec(
        image=image,
        mounts=[Mount(source=repo, target=task.repo_path, read_only=False)],
        workdir=task.repo_path,
        labels={f"{LABEL_PREFIX}.purpose": "grade", f"{LABEL_PREFIX}.task": task.instance_id},
    )
    flags = runner_tampering(diff, dropped)
    files = test_files(task)
    guarded = run_guarded_pytest(
        spec,
        task.test_command,
        repo=repo,
        canary_file=files[0],
        test_files=files,
        graded_tiers=(task.FAIL_TO_PASS, task.PASS_TO_PASS),
        work_dir=work_dir,
        backend=backend,
        timeout_s=timeout_s,
    )
    report = judge(task, guarded.statuses)
    reason = report.reason
    if guarded.tampered is not None:
        reason = f"tampered: {guarded.tampered}"
    elif guarded.run.timed_out:
        reason = f"the tests timed out after {timeout_s:g}s; {reason}"
    elif guarded.untrusted is not None:
        reason = f"{guarded.untrusted}; {reason}"
    if guarded.must_fail_note:
        reason += f"; {guarded.must_fail_note}"
    trusted = guarded.tampered is None and guarded.untrusted is None
    return report.model_copy(
        update={
            "resolved": report.resolved and trusted,
            "reason": reason + dropped_note(dropped) + tampering_note(flags),
            "runner_tampering": flags,
            "tests_exit_code": None if guarded.run.timed_out else guarded.run.exit_code,
            "tests_timed_out": guarded.run.timed_out,
            "log_tail": guarded.log[-LOG_TAIL_CHARS:],
            "duration_s": time.monotonic() - started,
            "dropped_for_grading": dropped,
            "tampered": guarded.tampered,
        }
    )


def test_files(task: Task) -> list[str]:
    """The hidden tests' Python files, FAIL_TO_PASS's first: the twins go in them (the
    canaries, when no test can be twinned, in the first)."""
    paths = [test_id.split("::", 1)[0] for test_id in [*task.FAIL_TO_PASS, *task.PASS_TO_PASS]]
    found = list(dict.fromkeys(path for path in paths if path.endswith(".py")))
    if not found:
        raise CanaryError(f"{task.instance_id}: no test id names a Python test file for the twins")
    return found


def canary_file(task: Task) -> str:
    """The first hidden test file (FAIL_TO_PASS first)."""
    return test_files(task)[0]


def run_guarded_pytest(
    spec: SandboxSpec,
    command: list[str],
    *,
    repo: Path,
    canary_file: str,
    work_dir: Path,
    backend: SandboxBackend,
    timeout_s: float,
    env: Mapping[str, str] | None = None,
    test_files: Sequence[str] = (),
    graded_tiers: Sequence[Sequence[str]] = (),
) -> GuardedRun:
    """Run pytest `command` (from `spec.workdir`, `repo` mounted there) with the grader's
    plugin, twins in `canary_file` and `test_files` (of the tests in `graded_tiers` first;
    canaries in `canary_file` when none can be twinned), and every check of the module
    docstring."""
    try:
        must_fail = plant_must_fail(repo, [canary_file, *test_files], graded_tiers)
    except CanaryError as exc:  # the diff removed the test file, or put a link in its place
        missing = ExecResult(exit_code=-1, stdout="", stderr=str(exc), duration_s=0.0)
        return GuardedRun(missing, {}, None, f"the tests were not run: {exc}")
    nonce = os.urandom(16).hex()
    grader = work_dir / "grader"
    results = work_dir / "results"
    grader.mkdir()
    results.mkdir()
    shutil.copyfile(PLUGIN_SOURCE, grader / f"{PLUGIN_MODULE}.py")
    (grader / GRADING_FILE).write_text(json.dumps({"nonce": nonce}))
    os.chmod(grader, 0o755)
    for path in grader.iterdir():
        os.chmod(path, 0o644)
    # The sandbox runs as an unprivileged user that owns none of these host files.
    make_world_writable(results)
    make_world_writable(repo)
    guarded_spec = spec.model_copy(
        update={
            "mounts": [
                *spec.mounts,
                Mount(source=grader, target=GRADER_DIR, read_only=True),
                Mount(source=results, target=RESULTS_DIR, read_only=False),
            ]
        }
    )
    with WriteWatch(results) as watch:
        sandbox = backend.start(guarded_spec)
        try:
            run = sandbox.exec(
                [*command, *GRADER_PYTEST_ARGS],
                timeout_s=timeout_s,
                env={**(env or {}), **GRADER_ENV},
                cwd=spec.workdir,
            )
        finally:
            sandbox.close()  # every process it left is gone before the folder is judged
        changes = watch.changes()
    return verify(run, results / RESULTS_FILE, changes, must_fail=must_fail, nonce=nonce)


def verify(
    run: ExecResult,
    results_file: Path,
    changes: list[Change],
    *,
    must_fail: MustFail | Canaries,
    nonce: str,
) -> GuardedRun:
    """Check one run's results against its exit status, the twins (or canaries), the nonce
    and the folder's changes; see the module docstring."""
    planted = must_fail if isinstance(must_fail, MustFail) else MustFail(canaries=must_fail)

    def verdict(
        statuses: Mapping[str, TestStatus], tampered: str | None, untrusted: str | None
    ) -> GuardedRun:
        return GuardedRun(run, planted.without(statuses), tampered, untrusted, planted.note)

    if run.timed_out:
        return verdict({}, None, "the tests timed out")
    forged_writes = unexpected_changes(changes)
    if forged_writes is not None:
        return verdict({}, forged_writes, None)
    results = read_plugin_results(results_file)
    if results is None:
        if run.exit_code == 0:
            return verdict(
                {},
                f"the test runner exited 0 without writing its results, although the must-fail "
                f"{planted.example} runs: it was cut short",
                None,
            )
        return verdict({}, None, f"no test results (test command exit code {run.exit_code})")
    statuses = results.tests
    if results.nonce != nonce:
        return verdict({}, "the results file does not carry this grading's nonce", None)
    if results.exit_status != run.exit_code:
        said = (
            f"the session ended with exit status {results.exit_status}, "
            f"the test runner exited {run.exit_code}"
        )
        if not 0 <= run.exit_code <= PYTEST_LAST_EXIT_CODE:
            # Killed by a signal (the memory limit, say) after the results were written.
            return verdict({}, None, f"the test runner was killed after its session ended ({said})")
        return verdict({}, f"the results say {said}", None)
    wrong = planted.check(statuses)
    if run.exit_code == 0:
        exited = f"the test runner exited 0, although the must-fail {planted.example} runs"
        return verdict({}, exited + (f"; {wrong}" if wrong else ""), None)
    if wrong is not None:
        return verdict({}, wrong, None)
    if run.exit_code != PYTEST_TESTS_FAILED:
        return verdict({}, None, f"the test runner ended abnormally (exit code {run.exit_code})")
    return verdict(statuses, None, None)


def unexpected_changes(changes: list[Change]) -> str | None:
    """Evidence of writes to the results folder other than the plugin's one, or None."""
    creates = [c for c in changes if c.name == RESULTS_FILE and c.kind == "create"]
    closes = [c for c in changes if c.name == RESULTS_FILE and c.kind == "close_write"]
    others = [
        c for c in changes if c.kind not in ("create", "modify", "close_write") or (c.name != RESULTS_FILE)
    ]
    problems = []
    if len(creates) > 1 or len(closes) > 1:
        problems.append(f"the results file was created {len(creates)} and written {len(closes)} times")
    if others:
        shown = ", ".join(sorted({f"{c.kind} {c.name or '(the folder)'}" for c in others})[:10])
        problems.append(f"the results folder saw changes other than the plugin's one write: {shown}")
    return "; ".join(problems) or None


def read_plugin_results(path: Path) -> PluginResults | None:
    """The plugin's file; None when it is missing, a link, too large or unreadable."""
    # The sandbox wrote this file: a symlink would make the host read one of its own files, a
    # FIFO would block the read.
    raw = read_regular_file(path, MAX_RESULTS_BYTES + 1)
    if raw is None or len(raw) > MAX_RESULTS_BYTES:
        return None
    try:
        results = PluginResults.model_validate_json(raw)
    except ValidationError:
        return None
    return results if results.version == RESULTS_VERSION else None


def read_results(path: Path) -> dict[str, TestStatus]:
    """Per-test statuses from the plugin's file; empty when it is missing or unreadable,
    so that every expected test then counts as missing, hence failed."""
    results = read_plugin_results(path)
    return dict(results.tests) if results is not None else {}


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
