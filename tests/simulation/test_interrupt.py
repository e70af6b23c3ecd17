"""Stopping `clade sim`: Ctrl-C, SIGTERM or a closed terminal ends the command and its worker
processes promptly, says that nothing was written, and leaves no folder of its own behind; a
command killed outright takes its workers with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from service.simulation.stopping import STOP_SIGNALS, catching_stop_signals

DEADLINE_S = 120.0  # generous: a busy machine; a healthy stop takes about a second


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _start_sitting(out: Path, jobs: str) -> subprocess.Popen[str]:
    """A sitting of hours, in its own process group, once its runs are under way."""
    command = [sys.executable, "-m", "cli.main", "sim", "--seeds", "40", "--budget", "1000"]
    sitting = subprocess.Popen(
        [*command, "--jobs", jobs, "--out", str(out)],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "COLUMNS": "1000"},
        # Its own group, with Ctrl-C's default action (a background job ignores it).
        process_group=0,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert sitting.stderr is not None
    started = time.monotonic()
    said: list[str] = []
    # Right after this line the worker processes are being forked: the moment a stop is most
    # easily lost (CI once saw a Ctrl-C there swallowed and the sitting run on).
    while not any("runs into" in line for line in said):
        assert time.monotonic() - started < DEADLINE_S, said
        said.append(sitting.stderr.readline())
    return sitting


def _assert_group_ends(pgid: int) -> None:
    gone = time.monotonic() + DEADLINE_S
    while _group_alive(pgid):  # the worker processes end with the command
        assert time.monotonic() < gone, "a worker process outlived the stopped sitting"
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("jobs", "stop", "to_group"),
    [
        ("1", signal.SIGINT, True),  # Ctrl-C at a terminal reaches the whole group
        ("2", signal.SIGINT, True),
        ("2", signal.SIGTERM, False),  # kill, timeout, a service manager: the command alone
        ("2", signal.SIGHUP, False),  # the terminal closed
    ],
)
def test_a_stop_ends_the_sitting_and_its_workers_and_writes_nothing(
    tmp_path: Path, jobs: str, stop: signal.Signals, to_group: bool
) -> None:
    out = tmp_path / "sitting"
    sitting = _start_sitting(out, jobs)
    try:
        if to_group:
            os.killpg(sitting.pid, stop)
        else:
            os.kill(sitting.pid, stop)
        # An orphaned worker would hold stderr open, and this would time out.
        _, rest = sitting.communicate(timeout=DEADLINE_S)
    finally:
        if _group_alive(sitting.pid):
            os.killpg(sitting.pid, signal.SIGKILL)
    assert sitting.returncode == 128 + stop
    assert f"interrupted: no results written ({out} removed)" in " ".join(rest.split())
    assert "Traceback" not in rest
    assert "Exception ignored" not in rest
    assert not out.exists()
    _assert_group_ends(sitting.pid)


def test_workers_die_with_a_killed_sitting(tmp_path: Path) -> None:
    sitting = _start_sitting(tmp_path / "sitting", "2")
    try:
        sitting.kill()  # SIGKILL: no handler runs in the command
        sitting.communicate(timeout=DEADLINE_S)
        assert sitting.returncode == -signal.SIGKILL
        _assert_group_ends(sitting.pid)
    finally:
        if _group_alive(sitting.pid):
            os.killpg(sitting.pid, signal.SIGKILL)


def test_signals_ignored_before_stay_ignored_and_handlers_come_back() -> None:
    # Under nohup (SIGHUP ignored) or as a background job (SIGINT ignored) a sitting must not
    # start answering them; a sitting inside another (the CLI's catch around `run_all`'s) is one.
    before = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with catching_stop_signals() as outer:
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is outer
            with catching_stop_signals() as inner:
                assert inner is outer
            assert signal.getsignal(signal.SIGTERM) is outer
        assert signal.getsignal(signal.SIGTERM) is before[signal.SIGTERM]
        assert signal.getsignal(signal.SIGINT) is before[signal.SIGINT]
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
