"""The `clade` command line, run as a real process against a live service."""

from __future__ import annotations

import io
import json
import os
import shlex
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from rich.console import Console

from cli.demo import next_steps
from tests.helpers import import_seed, write_agent
from tests.servers import ServiceProcess, closed_port


def clade(service_url: str, data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLADE_")}
    env |= {"CLADE_SERVICE_URL": service_url, "CLADE_DATA_DIR": str(data_dir), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(params=["sqlite"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The CLI only speaks HTTP; one database is enough here."""
    return f"sqlite:///{tmp_path / 'clade.db'}"


def test_seed_run_and_agent_commands(live_service: ServiceProcess, tmp_path: Path) -> None:
    data = live_service.data_dir
    url = live_service.url
    repo = write_agent(tmp_path / "agent-repo")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "uncommitted.txt").write_text("not part of the seed")
    subprocess.run(["git", "-C", str(repo), "add", "agent.toml", "tiny"], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "seed"],
        check=True,
    )
    imported = clade(url, data, "--json", "seed", "import", str(repo), "--name", "tiny")
    assert imported.returncode == 0, imported.stderr
    seed = json.loads(imported.stdout)["id"]

    config = tmp_path / "run.yaml"
    config.write_text(f"name: cli-run\nseed_agent: {seed}\nbudget:\n  max_children: 3\n")
    started = clade(url, data, "run", "start", str(config))
    assert started.returncode == 0, started.stderr
    assert "started run" in started.stdout

    listed = json.loads(clade(url, data, "--json", "run", "list").stdout)
    assert listed["total"] == 1
    run_id = listed["items"][0]["id"]
    table = clade(url, data, "run", "list").stdout
    assert "cli-run" in table and "0/3" in table

    shown = clade(url, data, "run", "show", run_id)
    assert shown.returncode == 0 and "running" in shown.stdout and seed[:12] in shown.stdout

    assert "paused" in clade(url, data, "run", "pause", run_id).stdout
    assert "running" in clade(url, data, "run", "resume", run_id).stdout
    assert "cancelled" in clade(url, data, "run", "cancel", run_id).stdout
    conflict = clade(url, data, "run", "resume", run_id)
    assert conflict.returncode == 1 and "409" in conflict.stderr and "cancelled" in conflict.stderr

    top = tmp_path / "top.tar.gz"
    exported_run = clade(url, data, "run", "export", run_id, "--out", str(top), "--k", "2")
    assert exported_run.returncode == 0, exported_run.stderr
    with tarfile.open(top) as tar:
        assert tar.getnames() == []  # the seed was never scored: no agent ranks yet

    out = tmp_path / "seed.tar.gz"
    exported = clade(url, data, "agent", "export", seed, "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    with tarfile.open(out) as tar:
        names = tar.getnames()
    assert f"agent-{seed[:12]}/metadata.json" in names
    assert f"agent-{seed[:12]}/code/uncommitted.txt" not in names


def test_invalid_config_names_the_field(live_service: ServiceProcess, tmp_path: Path) -> None:
    service = live_service
    config = tmp_path / "bad.yaml"
    config.write_text(f"seed_agent: {'a' * 40}\nbudget:\n  max_usd: -3\n")
    result = clade(service.url, service.data_dir, "run", "start", str(config))
    assert result.returncode == 1
    assert "budget.max_usd" in result.stderr
    missing = clade(service.url, service.data_dir, "run", "start", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 1 and "no such file" in missing.stderr
    # A refusal of the service's own (not a config field): the same one-line message, naming the part.
    folder = tmp_path / "no-manifest"
    folder.mkdir()
    (folder / "x.py").write_text("x = 1\n")
    refused = clade(service.url, service.data_dir, "seed", "import", str(folder))
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [
        "error: POST /api/seeds failed (422): file: agent.toml is missing at the agent's root"
    ]


def test_unreachable_service_is_a_clear_error(tmp_path: Path) -> None:
    with closed_port() as port:
        result = clade(f"http://127.0.0.1:{port}", tmp_path, "run", "list")
    assert result.returncode == 1
    assert "cannot reach the Clade service" in result.stderr and "clade serve" in result.stderr
    assert "Traceback" not in result.stderr


def printed_next_steps(service_url: str, run_id: str, best: str, serving: bool) -> list[str]:
    """What `clade demo` prints after its summary, on a console narrower than its commands."""
    screen = io.StringIO()
    console = Console(file=screen, width=60, color_system=None)
    next_steps(console, service_url=service_url, run_id=run_id, best=best, serving=serving)
    return screen.getvalue().splitlines()


def test_demo_ends_with_commands_that_work_as_printed(live_service: ServiceProcess, tmp_path: Path) -> None:
    service = live_service  # the printed commands reach it over HTTP, from another process
    seed_id = import_seed(service, tmp_path)
    with service.admin as client:
        created = client.post("/api/runs", json={"seed_agent": seed_id, "budget": {"max_children": 1}})
    assert created.status_code == 201, created.text
    run_id = created.json()["id"]

    lines = printed_next_steps(service.url, run_id, seed_id, serving=True)
    assert f"stay up at {service.url}/ until Ctrl-C" in lines[0]
    commands = [line.strip() for line in lines[1:]]
    assert [c.split()[3] for c in commands] == ["run", "agent"]  # clade --url URL <group> ...

    # Run each line as a user pasting it into another terminal: no CLADE_* variable names the service.
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLADE_")}
    env |= {"CLADE_DATA_DIR": str(tmp_path / "another-terminal"), "COLUMNS": "200"}
    for command in commands:
        argv = shlex.split(command)
        assert argv[0] == "clade"
        result = subprocess.run(
            [sys.executable, "-m", "cli.main", *argv[1:]],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, f"{command}: {result.stderr}"
    with tarfile.open(tmp_path / "best-agent.tar.gz") as tar:
        assert f"agent-{seed_id[:12]}/metadata.json" in tar.getnames()

    stopped = printed_next_steps(service.url, run_id, seed_id, serving=False)
    assert "start it again with `clade up`" in stopped[0]
    assert [line.strip() for line in stopped[1:]] == commands
