"""What an agent leaves on the worker's disk is bounded, and never blocks or floods the host.

Through the real evaluation path (a live service, Docker sandboxes, the gateway): an agent
that plants FIFOs where the host reads its files back is recorded at once, with the reason;
an agent that writes three times its disk allowance is stopped at it, its evaluation records
the limit as its failure (not an infrastructure error, so nothing is sent again), and no
mount, loop device or container is left behind, with either enforcement (`loop` on a
loop-mounted image, `watch` on the host's disk).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from contracts.config import LimitsConfig
from sandbox.disk import can_loop_mount
from sandbox.docker_backend import DockerBackend
from tests.helpers import tar_of
from tests.worker.harness import DEFAULT_LIMITS, EvaluationStack, make_agent
from tests.worker.test_hostile_agents import assert_worker_goes_on, targets
from worker.metrics import TimedBackend
from worker.validation import validate_child
from worker.workspace import init_repo

pytestmark = pytest.mark.docker

LIMIT_MB = 64


@contextmanager
def worker_settings(stack: EvaluationStack, **changes: Any) -> Iterator[None]:
    """The stack's worker with other settings for one test (as its environment would set them)."""
    before = stack.ctx.settings
    stack.ctx.settings = before.model_copy(update=changes)
    try:
        yield
    finally:
        stack.ctx.settings = before


def mounts_under(folder: Path) -> list[str]:
    return [line for line in Path("/proc/self/mounts").read_text().splitlines() if str(folder) in line]


def loop_devices_under(folder: Path) -> list[str]:
    listed = subprocess.run(["losetup", "-a"], capture_output=True, text=True, check=False).stdout
    return [line for line in listed.splitlines() if str(folder) in line]


def assert_nothing_left(stack: EvaluationStack) -> None:
    assert stack.clade_containers() == []
    assert stack.leftover_workspaces() == []
    assert mounts_under(stack.ctx.work_dir) == []
    assert loop_devices_under(stack.ctx.work_dir) == []


def test_fifos_where_the_host_reads_are_refused_at_once(
    stack: EvaluationStack, tmp_path: Path, well_behaved: Path
) -> None:
    """A FIFO as its trajectory (and in its repository) never makes the worker wait: the
    evaluation is recorded in seconds, saying why the trajectory was not read."""
    agent = make_agent(tmp_path / "attack-fifo", "attack_fifo", targets())
    evaluated = stack.evaluate(agent)

    result = evaluated.result
    assert evaluated.detail["status"] == "done" and result.resolved is False
    assert result.agent_exit_code == 0 and result.failure is None
    assert result.trajectory == {"unreadable": "not read: trajectory.json is not a regular file (a FIFO)"}
    assert "fifos planted" in result.agent_log
    assert evaluated.findings() == {"fifo": True}  # its diff was taken; git left the FIFO out
    assert "b/pipe" not in result.diff
    assert_nothing_left(stack)
    assert_worker_goes_on(stack, well_behaved)


ENFORCEMENTS = [
    pytest.param(
        "loop", marks=pytest.mark.skipif(not can_loop_mount(), reason="needs root and loop devices")
    ),
    "watch",
]


@pytest.mark.parametrize("enforcement", ENFORCEMENTS)
def test_writing_three_times_the_disk_limit_is_stopped_with_the_reason(
    stack: EvaluationStack, tmp_path: Path, well_behaved: Path, enforcement: str
) -> None:
    """3x the allowance, in incompressible data: `loop` refuses the writes past it (ENOSPC in
    the sandbox), `watch` removes the sandbox once it is past; both record the limit."""
    agent = make_agent(
        tmp_path / f"attack-disk-{enforcement}",
        "attack_disk",
        targets(repo_mb=2 * LIMIT_MB, out_mb=LIMIT_MB, forever=True),
    )
    with worker_settings(stack, sandbox_disk_mb=LIMIT_MB, sandbox_disk_enforcement=enforcement):
        evaluated = stack.evaluate(agent, solve_timeout_s=120)

    result = evaluated.result
    assert evaluated.detail["status"] == "done" and result.resolved is False
    assert result.failure == (
        f"the agent wrote more than {LIMIT_MB} MiB to its folders (the worker's limit, CLADE_SANDBOX_DISK_MB)"
    )
    assert result.diff == "" and result.timed_out is False  # stopped at the limit, not at its timeout
    if enforcement == "loop":
        assert "unhindered" not in result.agent_log
        assert "refused: OSError: [Errno 28] No space left on device" in result.agent_log
    assert_nothing_left(stack)
    assert_worker_goes_on(stack, well_behaved)


def child_patch(parent: Path, change: Callable[[Path], object]) -> str:
    """The patch that `change` makes to a copy of `parent`, as the improver hands it back."""
    work = parent.parent / f"{parent.name}-child"
    shutil.copytree(parent, work)
    init_repo(work, "parent")
    change(work)
    subprocess.run(["git", "add", "-A"], cwd=work, check=True)
    return subprocess.run(
        ["git", "diff", "--cached", "--binary", "HEAD"], cwd=work, check=True, capture_output=True, text=True
    ).stdout


def test_a_child_whose_agent_toml_is_a_link_is_rejected_unread(
    stack: EvaluationStack, tmp_path: Path
) -> None:
    """The improver's patch makes agent.toml a link to a file of the worker's host (here a valid
    manifest whose check command would leave a mark): validation refuses it without reading it."""
    parent = tmp_path / "parent"
    parent.mkdir()
    (parent / "agent.toml").write_text('name = "parent"\nsolve = "true"\n')
    mark = tmp_path / "host-read"
    host_file = tmp_path / "host-manifest.toml"
    host_file.write_text(f'name = "host"\nsolve = "true"\ncheck = "touch {mark}"\n')

    def link(work: Path) -> None:
        (work / "agent.toml").unlink()
        (work / "agent.toml").symlink_to(host_file)

    reason = validate_child(
        stack.ctx, tar_of(parent), child_patch(parent, link), LimitsConfig(**DEFAULT_LIMITS)
    )
    assert (
        reason
        == "the child does not start: agent.toml is not a regular file (a symbolic link); it is not read"
    )
    assert not mark.exists()
    assert_nothing_left(stack)


@pytest.mark.parametrize("enforcement", ENFORCEMENTS)
def test_a_childs_check_command_writing_past_the_limit_is_its_rejection(
    stack: EvaluationStack, tmp_path: Path, enforcement: str
) -> None:
    parent = tmp_path / "parent"
    parent.mkdir()
    (parent / "agent.toml").write_text('name = "parent"\nsolve = "true"\n')
    fill = f"head -c {3 * LIMIT_MB}M /dev/urandom > /clade/agent/fill.bin"

    def flood(work: Path) -> None:
        (work / "agent.toml").write_text(f'name = "child"\nsolve = "true"\ncheck = "{fill}"\n')

    with worker_settings(stack, sandbox_disk_mb=LIMIT_MB, sandbox_disk_enforcement=enforcement):
        reason = validate_child(
            stack.ctx, tar_of(parent), child_patch(parent, flood), LimitsConfig(**DEFAULT_LIMITS)
        )
    assert reason == f"the child's check command ({fill}) wrote more than {LIMIT_MB} MiB"
    assert_nothing_left(stack)


def test_tests_that_write_past_the_limit_while_graded_are_killed(
    stack: EvaluationStack, tmp_path: Path, well_behaved: Path
) -> None:
    """The agent's code runs in the grading sandbox's test process: writing 3x the limit there
    kills the tests, and the evaluation is recorded as not resolved with the reason in its log."""
    agent = make_agent(
        tmp_path / "attack-grading-disk", "attack_grading_disk", targets(grade_mb=3 * LIMIT_MB)
    )
    timed = stack.ctx.backend
    assert isinstance(timed, TimedBackend)
    backend = timed.inner  # the worker's DockerBackend behind its metrics
    assert isinstance(backend, DockerBackend)
    before = backend.writable_limit_mb
    backend.writable_limit_mb = LIMIT_MB
    try:
        evaluated = stack.evaluate(agent, test_timeout_s=600)
    finally:
        backend.writable_limit_mb = before
    result = evaluated.result
    assert evaluated.detail["status"] == "done" and result.resolved is False
    assert result.failure is None  # the agent itself ran fine
    assert "timed out" not in result.grade_reason
    assert (
        f"clade: every process was killed: the sandbox wrote more than {LIMIT_MB} MiB to its folders"
        in result.test_log
    )
    assert_nothing_left(stack)
    assert_worker_goes_on(stack, well_behaved)
