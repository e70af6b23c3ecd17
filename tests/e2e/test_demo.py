"""`clade demo` as a user runs it: the run, the summary, then the archive and dashboard stay up until
Ctrl-C, and the commands it prints at the end work as printed from another terminal."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import httpx
import pytest

from tests.process_output import Output

pytestmark = pytest.mark.docker


@pytest.mark.timeout(1500)
def test_demo_serves_until_ctrl_c_and_its_last_commands_work(base_image: str, tmp_path: Path) -> None:
    # Port 0: the demo serves on a port it binds itself, and says which.
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLADE_")}
    env |= {"CLADE_DATA_DIR": str(tmp_path / "data"), "CLADE_SERVICE_URL": "http://127.0.0.1:0"}
    env["COLUMNS"] = "100"
    # Ctrl-C must reach it even when this test runs with SIGINT ignored (started in the background
    # by a non-interactive shell): a child inherits an ignored signal, never a handler.
    ignored = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        demo = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "demo", "--children", "1"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
    finally:
        signal.signal(signal.SIGINT, ignored)
    try:
        output = Output(demo)
        deadline = time.monotonic() + 1200
        while "until Ctrl-C" not in (line := output.next_line(deadline)):
            pass
        served = re.search(r"stay up at (http://127\.0\.0\.1:\d+)/", line)
        assert served and not served.group(1).endswith(":0"), line
        url = served.group(1)
        commands = [output.next_line(time.monotonic() + 30).strip() for _ in range(2)]
        assert "the archive" in "\n".join(output.seen)  # the summary came first
        # The held-out tasks are of the kinds the scripted rules teach: the pick scores above 0 there.
        summary = "\n".join(output.seen)  # the line may wrap at 100 columns
        heldout = re.search(
            r"best agent [0-9a-f]{40}:\s+score .*?held-out\s+(\d\.\d\d)\s", summary, re.DOTALL
        )
        assert heldout and float(heldout.group(1)) > 0, summary[-2000:]

        # Still serving: the API answers, and the commands run from a terminal that has no CLADE_* settings.
        assert httpx.get(f"{url}/api/health", timeout=10).status_code == 200
        other = {k: v for k, v in os.environ.items() if not k.startswith("CLADE_")}
        other |= {"CLADE_DATA_DIR": str(tmp_path / "another-terminal"), "COLUMNS": "200"}
        for command in commands:
            argv = shlex.split(command)
            assert argv[0] == "clade", command
            result = subprocess.run(
                [sys.executable, "-m", "cli.main", *argv[1:]],
                env=other,
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert result.returncode == 0, f"{command}: {result.stdout}{result.stderr}"
        with tarfile.open(tmp_path / "best-agent.tar.gz") as tar:
            assert any(name.endswith("/metadata.json") for name in tar.getnames())

        demo.send_signal(signal.SIGINT)  # Ctrl-C
        # It stops its processes one after another, each given 30 s before a kill: a bound on the
        # wait, not a judgement of speed.
        assert demo.wait(timeout=300) == 0
        rest = []
        while (line := output.lines.get(timeout=30)) is not None:  # the output ends with the demo
            rest.append(line)
        assert "stopping" in rest
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{url}/api/health", timeout=5)
    finally:
        if demo.poll() is None:
            os.killpg(demo.pid, signal.SIGTERM)
            demo.wait(timeout=60)
