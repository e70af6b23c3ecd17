"""`clade up` leaves no process behind: a closed terminal (SIGHUP) stops its stack as Ctrl-C does,
and when it is killed outright its service, worker and model server stop on their own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.process_output import Output

pytestmark = pytest.mark.docker  # the stack's worker starts only with an engine

START_S = 300.0  # a busy machine; the stack is usually up in seconds
STOP_S = 120.0  # each process is given 30 s before a kill


def _group(pgid: int) -> list[int]:
    """The processes of a process group still running (zombies count as gone)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # The command name (2nd field) is in parentheses and may hold spaces: split after it.
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        state, group = fields[0], int(fields[2])
        if group == pgid and state != "Z":
            members.append(int(entry.name))
    return members


def _start_up(tmp_path: Path) -> tuple[subprocess.Popen[str], Output]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLADE_")}  # the scripted model
    # Port 0: the stack binds a free one itself (never picked, then bound later).
    env |= {"CLADE_DATA_DIR": str(tmp_path / "data"), "CLADE_SERVICE_URL": "http://127.0.0.1:0"}
    up = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "up", "--concurrency", "1"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own group: the stack's processes are found by it
    )
    output = Output(up)
    deadline = time.monotonic() + START_S
    # Its last line before it waits for a stop (the one before it says it is up).
    while not output.next_line(deadline).startswith("logs: "):
        pass
    return up, output


def _assert_group_ends(pgid: int, log_dir: Path) -> None:
    deadline = time.monotonic() + STOP_S
    while left := _group(pgid):
        if time.monotonic() > deadline:
            logs = {p.name: p.read_text(errors="replace")[-1500:] for p in log_dir.glob("*.log")}
            raise AssertionError(f"processes {left} outlived `clade up`: {logs}")
        time.sleep(0.2)


@pytest.mark.parametrize("stop", [signal.SIGHUP, signal.SIGKILL])
def test_up_leaves_no_process_behind(tmp_path: Path, stop: signal.Signals) -> None:
    up, output = _start_up(tmp_path)
    try:
        assert len(_group(up.pid)) >= 4  # itself, the model server, the service, the worker
        up.send_signal(stop)  # to `clade up` alone, as `kill` sends it
        code = up.wait(timeout=STOP_S)
        if stop == signal.SIGHUP:
            assert code == 0
            said = []
            while (line := output.lines.get(timeout=STOP_S)) is not None:
                said.append(line)
            assert "stopping" in said
        else:
            assert code == -signal.SIGKILL
        _assert_group_ends(up.pid, tmp_path / "data" / "logs")
    finally:
        if _group(up.pid):
            os.killpg(up.pid, signal.SIGKILL)
