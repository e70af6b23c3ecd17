"""Grading by an evaluator command: it runs in a fresh sandbox and prints a JSON verdict.

The command runs from the repository (the agent's diff and the hidden tests applied),
as the sandbox user, with the task's evaluator/ folder mounted read-only at
/clade/evaluator. Its last non-empty line of standard output must be one JSON object:

    {"resolved": true, "reason": "3/3 checks pass", "tests": {"check_sum": "PASSED"}}

`resolved` (a JSON boolean) is required; `reason` and `tests` are optional; nothing
else is allowed. Anything else is read strictly as "not resolved", with the reason: no
verdict, malformed JSON, `"resolved": "yes"`, an extra key, a non-zero exit code (even
with a verdict that says resolved), a timeout. A verdict is never guessed.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchmarks.base import GradeReport, Task, TestGroupResult, TestStatus, apply_for_grading, dropped_note
from sandbox.base import LABEL_PREFIX, Mount, SandboxBackend, SandboxSpec
from sandbox.ownership import make_world_writable

EVALUATOR_MOUNT = "/clade/evaluator"
LOG_TAIL_CHARS = 5_000
_SHOWN_CHARS = 200


class Verdict(BaseModel):
    """The evaluator's last line of output."""

    model_config = ConfigDict(extra="forbid", strict=True)

    resolved: bool
    reason: str = ""
    tests: dict[str, TestStatus] = Field(default_factory=dict)


def parse_verdict(stdout: str) -> Verdict | str:
    """The verdict on the last non-empty line of `stdout`, or why there is none."""
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    if not lines:
        return "the evaluator printed no verdict"
    last = lines[-1]
    try:
        return Verdict.model_validate_json(last)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or 'verdict'}: {error['msg']}" for error in exc.errors()
        )
        return f"the evaluator's last line is not a valid verdict ({problems}): {last[:_SHOWN_CHARS]!r}"


def _exit_note(exit_code: int, stderr: str) -> str:
    """How the command ended, when it printed no verdict: what tells a crash from a silent pass."""
    last = next((line.strip() for line in reversed(stderr.splitlines()) if line.strip()), "")
    said = f"; its last error line: {last[:_SHOWN_CHARS]!r}" if last else ""
    return f" (it exited with code {exit_code}{said})"


def grade_with_evaluator(
    task: Task,
    repo: Path,
    diff: str,
    *,
    evaluator_dir: Path | None,
    backend: SandboxBackend,
    image: str,
    timeout_s: float,
    work_dir: Path,
) -> GradeReport:
    """Grade `diff` against `repo` (a fresh copy of the base state) with the task's evaluator."""
    started = time.monotonic()
    refused, dropped = apply_for_grading(task, repo, diff, started)
    if refused is not None:
        return refused
    mounts = [Mount(source=repo, target=task.repo_path, read_only=False)]
    if evaluator_dir is not None:
        # A copy: the sandbox sees it read-only, and never the user's own folder.
        copy = work_dir / "evaluator"
        shutil.copytree(evaluator_dir, copy, symlinks=True)
        make_world_writable(copy)
        mounts.append(Mount(source=copy, target=EVALUATOR_MOUNT, read_only=True))
    make_world_writable(repo)
    spec = SandboxSpec(
        image=image,
        mounts=mounts,
        workdir=task.repo_path,
        labels={f"{LABEL_PREFIX}.purpose": "grade", f"{LABEL_PREFIX}.task": task.instance_id},
    )
    sandbox = backend.start(spec)
    try:
        run = sandbox.exec(
            task.test_command,
            timeout_s=timeout_s,
            env={"PYTHONDONTWRITEBYTECODE": "1", "CLADE_EVALUATOR_DIR": EVALUATOR_MOUNT},
            cwd=task.repo_path,
        )
    finally:
        sandbox.close()
    verdict = parse_verdict(run.stdout)
    command = " ".join(task.test_command)
    if run.timed_out:
        resolved, reason = False, f"not resolved: the evaluator timed out after {timeout_s:g}s"
    elif isinstance(verdict, str):
        resolved, reason = False, f"not resolved: {verdict}{_exit_note(run.exit_code, run.stderr)}"
    elif run.exit_code != 0:
        said = "resolved" if verdict.resolved else "not resolved"
        resolved = False
        reason = f"not resolved: `{command}` exited with code {run.exit_code} (its verdict said {said})"
    else:
        resolved = verdict.resolved
        reason = "resolved" if resolved else "not resolved"
        reason += f": {verdict.reason}" if verdict.reason else ""
    reason += dropped_note(dropped)
    statuses = dict(verdict.tests) if not isinstance(verdict, str) else {}
    status = TestStatus.PASSED if resolved else TestStatus.FAILED
    expected = list(task.FAIL_TO_PASS)
    for test in expected:  # the verdict decides these; any other tests it lists are for people
        statuses[test] = status
    log = run.stdout + ("\n" + run.stderr if run.stderr else "")
    return GradeReport(
        instance_id=task.instance_id,
        resolved=resolved,
        patch_applied=True,
        reason=reason,
        test_statuses=statuses,
        FAIL_TO_PASS=TestGroupResult(**{"success" if resolved else "failure": expected}),
        tests_exit_code=None if run.timed_out else run.exit_code,
        tests_timed_out=run.timed_out,
        log_tail=log[-LOG_TAIL_CHARS:],
        duration_s=time.monotonic() - started,
        dropped_for_grading=dropped,
    )
