"""Ctrl-C during `clade sim`: the command and its worker processes end promptly, say that nothing
was written, and leave no folder of their own behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

DEADLINE_S = 120.0  # generous: a busy machine; a healthy stop takes under a second


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ctrl_c_ends_the_sitting_and_its_workers_and_writes_nothing(tmp_path: Path, jobs: str) -> None:
    out = tmp_path / "sitting"
    command = [sys.executable, "-m", "cli.main", "sim", "--seeds", "40", "--budget", "1000"]
    sitting = subprocess.Popen(
        [*command, "--jobs", jobs, "--out", str(out)],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "COLUMNS": "1000"},
        # Its own process group, with Ctrl-C's default action (a background job ignores it).
        process_group=0,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert sitting.stderr is not None
        started = time.monotonic()
        said: list[str] = []
        while not any("runs into" in line for line in said):  # the runs are under way
            assert time.monotonic() - started < DEADLINE_S, said
            said.append(sitting.stderr.readline())
        os.killpg(sitting.pid, signal.SIGINT)  # as a terminal sends Ctrl-C: to the whole group
        _, rest = sitting.communicate(timeout=DEADLINE_S)
    finally:
        if _group_alive(sitting.pid):
            os.killpg(sitting.pid, signal.SIGKILL)
    assert sitting.returncode == 130
    assert f"interrupted: no results written ({out} removed)" in " ".join(rest.split())
    assert "Traceback" not in rest
    assert not out.exists()
    gone = time.monotonic() + DEADLINE_S
    while _group_alive(sitting.pid):  # the worker processes end with it
        assert time.monotonic() < gone, "a worker process outlived the interrupted sitting"
        time.sleep(0.05)
