"""What an agent wrote, shown by `clade`: a terminal escape in a diff or a step's reason is shown
as text (`\\x1b`), never obeyed by the user's terminal; Rich markup in it is shown, not applied;
and a diff written to a file or a pipe stays byte for byte what the agent made."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import import_seed
from tests.servers import ServiceProcess
from tests.service.helpers import core_patch, open_step_in, start_run
from tests.service.test_cli_hostile_args import CLEAN_ENV, against, clade

# Clear the screen, write "pwned" to the clipboard (OSC 52), reverse the text's direction.
ESCAPES = "\x1b[2J\x1b]52;c;cHduZWQ=\x07\u202e"
MARKUP = "[link=file:///etc/passwd]click[/link]"


@pytest.fixture(params=["sqlite"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The CLI only speaks HTTP; one database is enough here."""
    return f"sqlite:///{tmp_path / 'clade.db'}"


def hostile_run(service: ServiceProcess, tmp_path: Path) -> tuple[str, str]:
    """A cancelled run with one child whose patch holds ESCAPES and one step rejected for a
    reason holding ESCAPES and MARKUP, as a worker relays an agent's output; (run, child)."""
    seed = import_seed(service, tmp_path)
    run_id = start_run(service, seed)
    url = service.env["CLADE_DATABASE_URL"]
    made, refused = (open_step_in(url, run_id=run_id, parent_id=seed) for _ in range(2))
    with service.worker as worker:
        child = worker.post(f"/api/worker/steps/{made}/child", json={"patch": core_patch(10, ESCAPES)})
        assert child.status_code == 200, child.text
        reason = f"improve failed: {ESCAPES} {MARKUP}"
        rejected = worker.post(f"/api/worker/steps/{refused}/reject", json={"reason": reason})
        assert rejected.status_code == 200, rejected.text
    with service.admin as admin:
        assert admin.post(f"/api/runs/{run_id}/cancel").status_code == 200
    return run_id, str(child.json()["id"])


def test_the_cli_shows_an_agents_escapes_and_markup_as_text(
    live_service: ServiceProcess, tmp_path: Path
) -> None:
    run_id, _ = hostile_run(live_service, tmp_path)
    token = live_service.secrets["admin_token"]
    watch = ["--url", live_service.url, "--token", token, "run", "watch", run_id]
    watched = clade(*watch, env={"COLUMNS": "1000"})  # one event a line
    assert watched.exit_code == 0, watched.output
    line = next(line for line in watched.output.splitlines() if "improve failed" in line)
    assert "\x1b" not in watched.output and "\x07" not in watched.output and "\u202e" not in watched.output
    # The reason reaches the user as JSON text, its escapes spelled out, its markup as written.
    assert "\\u001b[2J" in line and "\\u202e" in line and MARKUP in line


def test_a_diff_is_exact_into_a_pipe_and_shown_as_text_on_a_terminal(
    live_service: ServiceProcess, tmp_path: Path
) -> None:
    _, child = hostile_run(live_service, tmp_path)
    with live_service.anonymous as reader:
        made = reader.get(f"/api/agents/{child}/diff").content
    assert ESCAPES.encode() in made

    piped = against(live_service, "agent", "diff", child)
    assert piped.exit_code == 0, piped.output
    assert piped.stdout_bytes == made

    # On a terminal (a pseudo-terminal here) every escape is shown as text.
    env = {k: v for k, v in os.environ.items() if k not in CLEAN_ENV} | {"COLUMNS": "80"}
    command = [sys.executable, "-m", "cli.main", "--url", live_service.url, "agent", "diff", child]
    leader, follower = os.openpty()
    with subprocess.Popen(
        command, env=env, stdin=subprocess.DEVNULL, stdout=follower, stderr=subprocess.PIPE
    ) as cli:
        os.close(follower)
        shown = _until_closed(leader, deadline=time.monotonic() + 120)
        assert cli.wait(timeout=120) == 0, cli.stderr.read() if cli.stderr else ""
    os.close(leader)
    text = shown.decode()
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "+\\x1b[2J\\x1b]52;c;cHduZWQ=\\x07\\u202e" in text


def _until_closed(leader: int, *, deadline: float) -> bytes:
    """What the terminal shows until the program closes it (Linux: EIO on read)."""
    shown = b""
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([leader], [], [], left)
        if not ready:
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            return shown
        if not chunk:
            return shown
        shown += chunk
    raise AssertionError(f"the CLI still held the terminal after its deadline; it showed {shown[-500:]!r}")
