"""Run a Harbor task's verifier in a fresh sandbox over the agent's final state, and judge it.

What carries over from the agent's sandbox is the task's work folder (the Dockerfile's WORKDIR,
`/app` by Harbor's convention): the agent's diff of it is applied to a fresh copy of the
image's own, and mounted there in a new sandbox of the same image. Nothing else the agent did
carries over (packages it installed, files outside the work folder, processes it left running).

The verifier is `bash /tests/test.sh`, run as the sandbox user (never root) with the task's
tests mounted read-only at /tests and a host folder at /logs/verifier, watched while the
sandbox lives. The moment it exits, every process it left behind is killed (`VERIFIER`): a
program of the agent's that the verifier ran cannot write a reward after it. Verdicts:
- resolved: the verifier exited 0 and wrote a valid reward of at least `pass_reward`;
- not resolved: a timeout, a non-zero exit (a crash), no valid reward (`reward.py`), a
  reward below `pass_reward`, or a record of the reward folder the kernel could not keep whole
  (so many changes that its queue overflowed: a late write could hide among the lost ones);
- tampered: a reward file written after the verifier exited (after the marker the sweep makes
  in the reward folder: a second line of defence behind the kill), a full reward beside the
  verifier's own CTRF report of failed tests, or an agent's diff that names the reward folder
  or files (`reaches_verifier_logs`).
What no grader of this layout can tell: the agent's code, run by the verifier, writing the
reward file while the verifier runs (docs/harbor.md says so).
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.base import GradeReport, Task, TestGroupResult, TestStatus
from benchmarks.harbor.layout import HarborTask
from benchmarks.harbor.reward import REWARD_JSON, REWARD_TXT, read_reward
from benchmarks.write_watch import Change, WriteWatch
from sandbox.base import LABEL_PREFIX, Mount, SandboxBackend, SandboxSpec
from sandbox.ownership import make_world_writable

TESTS_MOUNT = "/tests"
LOGS_MOUNT = "/logs/verifier"
# The verifier, then every process it left behind killed at once: all but those that ran before
# it (the sandbox's init and keeper) and this shell, swept until none is left, so that nothing
# the agent's code started can write a reward afterwards. A process cannot be older than the
# keeper, whatever it calls itself.
# Before the sweep, a marker file is made and removed in the reward folder: a reward written
# after it in the kernel's record of the folder came from a process the verifier left behind,
# even one that wrote while the sweep was still looking for it.
EXITED_MARKER = ".clade-verifier-exited"
_SWEEP = (
    'before=" "; for d in /proc/[0-9]*; do before+="${d#/proc/} "; done; '
    f"/bin/bash {TESTS_MOUNT}/test.sh; status=$?; "
    f": > {LOGS_MOUNT}/{EXITED_MARKER} 2>/dev/null; rm -f {LOGS_MOUNT}/{EXITED_MARKER}; "
    "for ((round = 0; round < 100; round++)); do left=0; "
    'for d in /proc/[0-9]*; do p="${d#/proc/}"; '
    '[[ "$p" == "$$" || "$before" == *" $p "* ]] && continue; kill -9 "$p" 2>/dev/null && left=1; done; '
    "((left)) || break; done; "
    'exit "$status"'
)
VERIFIER = ["/bin/bash", "-c", _SWEEP]
LOG_TAIL_CHARS = 5_000
VERIFIER_TEST = "tests/test.sh"


@dataclass(frozen=True)
class Limits:
    timeout_s: float
    memory_mb: int
    cpus: float
    pass_reward: float


def run_verifier(
    task: Task,
    harbor: HarborTask,
    repo: Path,
    *,
    image: str,
    backend: SandboxBackend,
    limits: Limits,
    work_dir: Path,
    dropped: dict[str, str],
) -> GradeReport:
    """Grade `repo` (the base state with the agent's diff applied) with the task's verifier."""
    started = time.monotonic()
    tests = work_dir / "tests"
    shutil.copytree(harbor.tests, tests, symlinks=True)  # the sandbox never sees the user's own folder
    logs = work_dir / "logs"
    logs.mkdir()
    for folder in (tests, logs, repo):
        make_world_writable(folder)
    spec = SandboxSpec(
        image=image,
        mounts=[
            Mount(source=repo, target=harbor.workdir, read_only=False),
            Mount(source=tests, target=TESTS_MOUNT, read_only=True),
            Mount(source=logs, target=LOGS_MOUNT, read_only=False),
        ],
        env={"HOME": "/tmp", **harbor.verifier_env},
        workdir=harbor.workdir,
        memory_mb=limits.memory_mb,
        cpus=limits.cpus,
        tmpfs_exec=True,
        labels={f"{LABEL_PREFIX}.purpose": "grade", f"{LABEL_PREFIX}.task": task.instance_id},
    )
    with WriteWatch(logs) as watch:
        sandbox = backend.start(spec)
        try:
            run = sandbox.exec(VERIFIER, timeout_s=limits.timeout_s, cwd=harbor.workdir)
            while_running = len(watch.changes())
        finally:
            sandbox.close()  # every process the verifier left is gone before the folder is read
        changes = watch.changes()
    late = late_reward_writes(changes, while_running)
    lost = record_lost(changes)
    reward = read_reward(logs)
    tampered = None
    if late and not run.timed_out:
        tampered = f"{late[0]} was written after the verifier exited, by a process it left behind"
    elif reward.forged is not None:
        tampered = reward.forged
    if tampered is not None:
        resolved, reason = False, f"tampered: {tampered}"
    elif lost:
        # Fails closed: when the reward was written cannot be told, so it is not believed.
        resolved, reason = False, f"not resolved: {RECORD_LOST}"
    elif run.timed_out:
        resolved, reason = False, f"not resolved: the verifier timed out after {limits.timeout_s:g}s"
    elif run.exit_code != 0:
        said = f" (its reward said {reward.value:g})" if reward.value is not None else ""
        resolved, reason = False, f"not resolved: the verifier exited with code {run.exit_code}{said}"
    elif reward.value is None:
        resolved, reason = False, f"not resolved: {reward.problem}"
    else:
        resolved = reward.value >= limits.pass_reward
        verdict = "resolved" if resolved else "not resolved"
        reason = f"{verdict}: reward {reward.value:g} (resolved at {limits.pass_reward:g})"
    if dropped:
        reason += f"; left out of grading as test infrastructure: {', '.join(dropped)}"
    status = TestStatus.PASSED if resolved else TestStatus.FAILED
    log = run.stdout + ("\n" + run.stderr if run.stderr else "")
    return GradeReport(
        instance_id=task.instance_id,
        resolved=resolved,
        patch_applied=True,
        reason=reason,
        test_statuses={VERIFIER_TEST: status},
        FAIL_TO_PASS=TestGroupResult(**{"success" if resolved else "failure": [VERIFIER_TEST]}),
        tests_exit_code=None if run.timed_out else run.exit_code,
        tests_timed_out=run.timed_out,
        log_tail=log[-LOG_TAIL_CHARS:],
        duration_s=time.monotonic() - started,
        dropped_for_grading=dropped,
        tampered=tampered,
        reward=reward.value if tampered is None and not lost else None,
    )


RECORD_LOST = (
    "the kernel's record of the reward folder overflowed (too many changes while the verifier ran), "
    "so whether the reward was written after the verifier exited cannot be told"
)


def record_lost(changes: list[Change]) -> bool:
    """Whether the kernel dropped changes of the folder (its queue overflowed): the marker and a
    late reward write may be among them."""
    return any(c.kind == "overflow" for c in changes)


def late_reward_writes(changes: list[Change], while_running: int) -> list[str]:
    """The reward files changed after the verifier exited: after the sweep's marker was made,
    or if it never was (the folder refused it), after the first `while_running` changes."""
    exited = next(
        (n for n, c in enumerate(changes) if c.name == EXITED_MARKER and c.kind == "create"), while_running
    )
    return [c.name for c in changes[exited:] if c.name in (REWARD_TXT, REWARD_JSON)]


def reaches_verifier_logs(diff: str) -> str | None:
    """Evidence when the agent's diff adds a line naming the verifier's reward folder or files:
    a solution never needs them, a forged reward does. (Obfuscated, it is caught only if the
    write comes after the verifier exits; docs/harbor.md.)"""
    for line in diff.splitlines():
        if not line.startswith("+") or line.startswith("+++"):
            continue
        for needle in (LOGS_MOUNT, REWARD_TXT, REWARD_JSON):
            if needle in line:
                return (
                    f"the agent's diff adds a line naming the verifier's {needle}: {line[1:].strip()[:120]!r}"
                )
    return None


def tampered_report(task: Task, evidence: str, started: float) -> GradeReport:
    """The verdict on a diff caught before the verifier ran."""
    return GradeReport(
        instance_id=task.instance_id,
        resolved=False,
        patch_applied=True,
        reason=f"tampered: {evidence}",
        test_statuses={VERIFIER_TEST: TestStatus.FAILED},
        FAIL_TO_PASS=TestGroupResult(failure=[VERIFIER_TEST]),
        duration_s=time.monotonic() - started,
        tampered=evidence,
    )
