"""Grade a diff the way SWE-bench Pro's evaluator does, in sandboxes of the instance image.

SWE-bench Pro's `swe_bench_pro_eval.py` starts the instance image, resets /app to the base
commit, applies the patch, runs the last line of `before_repo_set_cmd` (it checks the graded
test files out of the fix's commit), runs `run_script.sh` over the selected test files
(joined by commas) with stdout and stderr in two files, runs `parser.py <stdout> <stderr>
<output.json>`, and calls an instance resolved when every FAIL_TO_PASS and PASS_TO_PASS
test has an entry with status PASSED in that output.

Clade does the same, with its own integrity rules where they fit:

1. The diff's changes to test files are dropped (`swebench.patches.graded_patch`); the rest
   is applied on the host to /app copied out of the image (with its git history); what it did
   to test infrastructure is put back (`graded_diff.py`, files the test or gold patch change
   exempt); the files the hidden tests touch (the test patch's and those the
   `before_repo_set_cmd` checks out) are reset and the test patch is applied over it, so the
   hidden tests win over the agent's edits of the same files.
2. A fresh hardened sandbox of the image (no network, read-only root, uid 1000) runs the last
   line of `before_repo_set_cmd` and the run script, the copy mounted at /app; the run's
   stdout and stderr go to a folder of their own.
3. The parser is data from the dataset, so it never runs on the host: it runs in a second
   fresh sandbox of the image, after the first is gone (with every process the agent's code
   may have left), which sees only the two logs (read-only) and an empty output folder: the
   agent's code never runs where the output file is written.
4. The output is read back only if it is a regular file, of bounded size, in the parser
   output's shape; a missing or malformed output, a parser that fails, or a test run that
   times out is never resolved.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from benchmarks.base import (
    BrokenTask,
    GradeReport,
    TestGroupResult,
    TestStatus,
    dropped_note,
    group_reason,
    unapplied,
)
from benchmarks.diffs import touched_paths
from benchmarks.gitops import apply_patch, reset_paths
from benchmarks.graded_diff import drop_test_infrastructure
from benchmarks.runner_tampering import runner_tampering, tampering_note
from benchmarks.swebench.patches import graded_patch
from benchmarks.swebench.testbed import export_repo, head_commit
from benchmarks.swebench_pro.tasks import PARSER, REPO_PATH, RUN_SCRIPT, SCRIPTS_DIR, SWEbenchProTask
from sandbox.base import LABEL_PREFIX, Mount, SandboxBackend, SandboxSpec
from sandbox.ownership import give_to_sandbox_user

LOGS_DIR = "/clade/pro-logs"  # stdout.log and stderr.log of the test run
OUTPUT_DIR = "/clade/pro-out"  # the parser's output.json; mounted only in the parser's sandbox
RUN_ENTRY = "run.sh"
PARSE_ENTRY = "parse.sh"
OUTPUT_NAME = "output.json"
MAX_OUTPUT_BYTES = 50_000_000
LOG_TAIL_CHARS = 5_000
TMPFS_MB = 1024
GRADE_ENV = {
    "HOME": "/tmp",
    "PYTHONDONTWRITEBYTECODE": "1",
    # The repository copy belongs to the worker's user, the scripts run as uid 1000.
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "safe.directory",
    "GIT_CONFIG_VALUE_0": "*",
}
# `git checkout <commit> -- <paths>`, the line of before_repo_set_cmd that stages the tests.
_CHECKOUT_PATHS = re.compile(r"\bgit\s+checkout\s+\S+\s+--\s+(.+)$")
_STATUSES = {"PASSED": TestStatus.PASSED, "FAILED": TestStatus.FAILED, "SKIPPED": TestStatus.SKIPPED}


@dataclass(frozen=True)
class Resources:
    """Limits of the grading sandboxes."""

    memory_mb: int = 4096
    cpus: float = 1.0
    pids: int = 1024


class ParsedTest(BaseModel):
    """One entry of a parser's output."""

    model_config = ConfigDict(extra="ignore")

    name: str
    status: str


class ParserOutput(BaseModel):
    """What a SWE-bench Pro parser writes: {"tests": [{"name": ..., "status": ...}, ...]}."""

    model_config = ConfigDict(extra="ignore")

    tests: list[ParsedTest]


class ParserFailed(ValueError):
    """The parser wrote no usable output; the message says why."""


def grade_task(
    task: SWEbenchProTask,
    diff: str,
    *,
    backend: SandboxBackend,
    timeout_s: float,
    parser_timeout_s: float,
    resources: Resources,
) -> GradeReport:
    started = time.monotonic()
    staged = staged_test_paths(task.before_repo_set_cmd)
    hidden = list(dict.fromkeys([*touched_paths(task.test_patch), *staged]))
    graded = graded_patch(diff, test_patch=task.test_patch, gold_patch=task.patch)
    left_out = dict.fromkeys(graded.dropped, "a test file: the hidden tests replace or ignore it")
    note = f"; changes to test files left out: {', '.join(graded.dropped)}" if graded.dropped else ""
    with tempfile.TemporaryDirectory(prefix="clade-swebench-pro-", ignore_cleanup_errors=True) as tmp:
        work = Path(tmp)
        repo = export_repo(backend.images, task.image, REPO_PATH, work / "export")
        head = head_commit(repo)
        if head != task.base_commit:
            raise BrokenTask(
                f"{task.instance_id}: {REPO_PATH} in {task.image} is at {head or 'no commit'}, "
                f"the row says {task.base_commit}"
            )
        applied = apply_patch(repo, graded.patch)
        if not applied.applied:
            return unapplied(task, applied.error, started, note)
        exempt = {*touched_paths(task.test_patch), *touched_paths(task.patch)}
        infrastructure = drop_test_infrastructure(repo, graded.patch, keep=exempt)
        left_out |= infrastructure
        note += dropped_note(infrastructure)
        reset_paths(repo, hidden)
        tests_applied = apply_patch(repo, task.test_patch)
        if not tests_applied.applied:
            return GradeReport(
                instance_id=task.instance_id,
                resolved=False,
                patch_applied=True,
                reason=f"the hidden tests do not apply over the patch: {tests_applied.error}{note}",
                duration_s=time.monotonic() - started,
                dropped_for_grading=left_out,
            )
        flags = runner_tampering(graded.patch, left_out)
        scripts, logs, out = write_scripts(task, work), work / "logs", work / "out"
        logs.mkdir()
        out.mkdir()
        give_to_sandbox_user(repo)
        give_to_sandbox_user(logs)
        give_to_sandbox_user(out)
        run = _exec(
            backend,
            task,
            [
                Mount(source=repo, target=REPO_PATH, read_only=False),
                Mount(source=scripts, target=SCRIPTS_DIR, read_only=True),
                Mount(source=logs, target=LOGS_DIR, read_only=False),
            ],
            RUN_ENTRY,
            timeout_s,
            resources,
            purpose="grade",
        )
        tail = _tail(logs / "stdout.log") + _tail(logs / "stderr.log")
        base = GradeReport(
            instance_id=task.instance_id,
            resolved=False,
            patch_applied=True,
            reason="",
            tests_exit_code=None if run.timed_out else run.exit_code,
            tests_timed_out=run.timed_out,
            log_tail=tail[-LOG_TAIL_CHARS:],
            dropped_for_grading=left_out,
            runner_tampering=flags,
        )
        if run.timed_out:
            failed = TestGroupResult(failure=[*task.FAIL_TO_PASS])
            return base.model_copy(
                update={
                    "reason": f"the tests timed out after {timeout_s:g}s{note}{tampering_note(flags)}",
                    "FAIL_TO_PASS": failed,
                    "PASS_TO_PASS": TestGroupResult(failure=[*task.PASS_TO_PASS]),
                    "duration_s": time.monotonic() - started,
                }
            )
        parse = _exec(
            backend,
            task,
            [
                Mount(source=scripts, target=SCRIPTS_DIR, read_only=True),
                Mount(source=logs, target=LOGS_DIR, read_only=True),
                Mount(source=out, target=OUTPUT_DIR, read_only=False),
            ],
            PARSE_ENTRY,
            parser_timeout_s,
            resources,
            purpose="parse",
        )
        try:
            if parse.timed_out:
                raise ParserFailed(f"the parser timed out after {parser_timeout_s:g}s")
            statuses = read_output(out / OUTPUT_NAME, parse.exit_code, parse.stderr)
        except ParserFailed as exc:
            return base.model_copy(
                update={
                    "reason": f"not resolved: {exc}{note}{tampering_note(flags)}",
                    "FAIL_TO_PASS": TestGroupResult(failure=[*task.FAIL_TO_PASS]),
                    "PASS_TO_PASS": TestGroupResult(failure=[*task.PASS_TO_PASS]),
                    "duration_s": time.monotonic() - started,
                }
            )
    resolved, fail_to_pass, pass_to_pass = decide(task, statuses)
    reason = group_reason(task, fail_to_pass, pass_to_pass, resolved=resolved)
    return base.model_copy(
        update={
            "resolved": resolved,
            "reason": reason + note + tampering_note(flags),
            "test_statuses": statuses,
            "FAIL_TO_PASS": fail_to_pass,
            "PASS_TO_PASS": pass_to_pass,
            "duration_s": time.monotonic() - started,
        }
    )


def decide(
    task: SWEbenchProTask, statuses: dict[str, TestStatus]
) -> tuple[bool, TestGroupResult, TestGroupResult]:
    """Pro's rule: resolved iff every FAIL_TO_PASS and PASS_TO_PASS test has status PASSED."""

    def group(tests: list[str]) -> TestGroupResult:
        passed = [test for test in tests if statuses.get(test) is TestStatus.PASSED]
        return TestGroupResult(success=passed, failure=[test for test in tests if test not in passed])

    fail_to_pass, pass_to_pass = group(task.FAIL_TO_PASS), group(task.PASS_TO_PASS)
    return not fail_to_pass.failure and not pass_to_pass.failure, fail_to_pass, pass_to_pass


def staged_test_paths(before_repo_set_cmd: str) -> list[str]:
    """The files the last line of `before_repo_set_cmd` checks out (`git checkout <c> -- a b`)."""
    lines = before_repo_set_cmd.strip().splitlines()
    match = _CHECKOUT_PATHS.search(lines[-1].strip()) if lines else None
    if match is None:
        return []
    try:
        return shlex.split(match.group(1))
    except ValueError:
        return []


def run_entry(task: SWEbenchProTask) -> str:
    """The test run, as Pro's entry script has it (its ENV lines are the image's own, already
    set): the last line of before_repo_set_cmd, then the run script over the selected tests."""
    lines = task.before_repo_set_cmd.strip().splitlines()
    # Pro writes the comma-joined list into its script unquoted, so the shell splits it at
    # white space (and no list at all runs every test); the same words here, never globbed.
    words = " ".join(shlex.quote(word) for word in ",".join(task.selected_test_files_to_run).split())
    return "\n".join(
        [
            "#!/bin/bash",
            f"cd {REPO_PATH}",
            lines[-1] if lines else ":",
            f"bash {SCRIPTS_DIR}/{RUN_SCRIPT} {words} > {LOGS_DIR}/stdout.log 2> {LOGS_DIR}/stderr.log",
            "",
        ]
    )


def parse_entry() -> str:
    """The parser's run, in a sandbox that has only the logs and the output folder."""
    return "\n".join(
        [
            "#!/bin/bash",
            "cd /tmp",
            'PY="$(command -v python || command -v python3)" ||',
            '  { echo "the image has no python to run the parser" >&2; exit 127; }',
            f'exec "$PY" {SCRIPTS_DIR}/{PARSER} {LOGS_DIR}/stdout.log {LOGS_DIR}/stderr.log '
            f"{OUTPUT_DIR}/{OUTPUT_NAME}",
            "",
        ]
    )


def write_scripts(task: SWEbenchProTask, work: Path) -> Path:
    scripts = work / "scripts"
    scripts.mkdir()
    files = {
        RUN_SCRIPT: task.run_script,
        PARSER: task.parser,
        RUN_ENTRY: run_entry(task),
        PARSE_ENTRY: parse_entry(),
    }
    for name, text in files.items():
        (scripts / name).write_text(text, encoding="utf-8")
        os.chmod(scripts / name, 0o644)
    os.chmod(scripts, 0o755)
    return scripts


def read_output(path: Path, exit_code: int, stderr: str) -> dict[str, TestStatus]:
    """The parser's output as statuses; `ParserFailed` unless it is a regular file of bounded
    size in the parser output's shape. A test with several entries counts as PASSED if one
    says so (Pro's rule); other statuses than PASSED, FAILED, SKIPPED are ERROR."""
    last = stderr.strip().splitlines()[-1][:300] if stderr.strip() else "no error output"
    why = f" (the parser exited {exit_code}: {last})" if exit_code != 0 else ""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise ParserFailed(f"the parser wrote no {OUTPUT_NAME}{why}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ParserFailed(f"the parser's {OUTPUT_NAME} is not a regular file")
    if info.st_size > MAX_OUTPUT_BYTES:
        raise ParserFailed(f"the parser's {OUTPUT_NAME} is larger than {MAX_OUTPUT_BYTES} bytes")
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        raw = handle.read(MAX_OUTPUT_BYTES + 1)
    try:
        output = ParserOutput.model_validate(json.loads(raw))
    except (ValueError, ValidationError) as exc:
        first = str(exc).splitlines()[0][:200]
        raise ParserFailed(f"the parser's {OUTPUT_NAME} is malformed: {first}{why}") from None
    statuses: dict[str, TestStatus] = {}
    for test in output.tests:
        status = _STATUSES.get(test.status.strip().upper(), TestStatus.ERROR)
        if statuses.get(test.name) is not TestStatus.PASSED:
            statuses[test.name] = status
    return statuses


@dataclass(frozen=True)
class _Run:
    exit_code: int
    stderr: str
    timed_out: bool


def _exec(
    backend: SandboxBackend,
    task: SWEbenchProTask,
    mounts: list[Mount],
    entry: str,
    timeout_s: float,
    resources: Resources,
    *,
    purpose: str,
) -> _Run:
    """Run one entry script of the scripts folder in a fresh sandbox of the task's image."""
    spec = SandboxSpec(
        image=task.image,
        mounts=mounts,
        workdir=REPO_PATH if purpose == "grade" else "/tmp",
        env=GRADE_ENV,
        memory_mb=resources.memory_mb,
        cpus=resources.cpus,
        pids=resources.pids,
        tmpfs_mb=TMPFS_MB,
        tmpfs_exec=True,  # toolchains build test binaries in /tmp
        labels={f"{LABEL_PREFIX}.purpose": purpose, f"{LABEL_PREFIX}.task": task.instance_id},
    )
    sandbox = backend.start(spec)
    try:
        result = sandbox.exec(["/bin/bash", f"{SCRIPTS_DIR}/{entry}"], timeout_s=timeout_s)
    finally:
        sandbox.close()  # every process the run left is gone before the next step
    return _Run(exit_code=result.exit_code, stderr=result.stderr, timed_out=result.timed_out)


def _tail(path: Path) -> str:
    """The end of a log the test run wrote (it may be large, or not a file at all)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return ""
    if not stat.S_ISREG(info.st_mode):
        return ""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        handle.seek(max(0, info.st_size - LOG_TAIL_CHARS))
        return handle.read().decode("utf-8", errors="replace")
