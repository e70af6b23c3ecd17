"""`clade doctor` against real components (a live service, Redis, Docker, the scripted model),
and against settings that point at closed ports: each failure is one line with advice."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.servers import ServiceProcess, closed_port
from worker.llm.script import Script
from worker.llm.scripted import ScriptedServer

REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture(params=["sqlite"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The doctor reads one database; SQLite is enough for the service it talks to."""
    return f"sqlite:///{tmp_path / 'clade.db'}"


def doctor(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        env=env | {"COLUMNS": "250"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def by_name(output: str) -> dict[str, dict[str, Any]]:
    report = json.loads(output)
    return {check["name"]: check for check in report["checks"]}


@pytest.mark.docker  # the engine is one of the checks
def test_a_healthy_machine_passes_every_check(live_service: ServiceProcess) -> None:
    with ScriptedServer(Script()) as model:
        env = live_service.env | {"CLADE_BROKER_URL": REDIS_URL, "CLADE_LLM_BASE_URL": model.base_url}
        result = doctor(env, "--json", "doctor", "--model", "scripted")
        calls = len(model.requests)
    assert result.returncode == 0, result.stdout + result.stderr
    checks = by_name(result.stdout)
    assert [name for name, check in checks.items() if check["status"] == "fail"] == []
    assert checks["docker"]["detail"].startswith("Docker engine ")
    assert checks["broker"]["detail"] == f"{REDIS_URL} answers"
    assert "migrations at head" in checks["database"]["detail"]
    assert checks["service"]["status"] == "ok"
    assert {checks[f"{role} token"]["detail"] for role in ("admin", "worker", "read")} == {"accepted"}
    llm = checks["llm"]
    assert llm["status"] == "ok" and "SCRIPTED" in llm["detail"] and calls == 1
    assert checks["disk"]["detail"].endswith(f"for the data dir {live_service.data_dir}")
    assert checks["images"]["status"] in ("ok", "warn")  # present, or missing with the command to build them


@pytest.mark.docker  # the engine must pass: these failures are the only ones
def test_closed_ports_and_a_wrong_token_are_failures_with_advice(live_service: ServiceProcess) -> None:
    with closed_port() as closed:
        env = live_service.env | {
            "CLADE_BROKER_URL": f"redis://127.0.0.1:{closed}/0",
            "CLADE_DATABASE_URL": f"postgresql+psycopg://clade:secret@127.0.0.1:{closed}/clade",
            "CLADE_LLM_BASE_URL": f"http://127.0.0.1:{closed}/v1",
            "CLADE_WORKER_TOKEN": "not-the-worker-token",
        }
        result = doctor(env, "--json", "doctor")
        assert result.returncode == 1
        checks = by_name(result.stdout)
        failed = {name for name, check in checks.items() if check["status"] == "fail"}
        assert failed == {"broker", "database", "llm", "worker token"}
        assert checks["broker"]["advice"] == "start Redis, or fix CLADE_BROKER_URL"
        assert (
            "secret" not in checks["database"]["detail"]
            and "fix CLADE_DATABASE_URL" in checks["database"]["advice"]
        )
        assert "CLADE_LLM_BASE_URL" in checks["llm"]["advice"]
        assert checks["worker token"]["advice"] == "set CLADE_WORKER_TOKEN to the service's value"
        assert checks["admin token"]["status"] == "ok"

        # Without the service, and as people read it: one line per check, with what to do.
        env["CLADE_SERVICE_URL"] = f"http://127.0.0.1:{closed}"
        lines = doctor(env, "doctor", "--no-llm").stdout.splitlines()
        service = next(line for line in lines if line.split()[1] == "service")
        assert service.startswith("fail service") and "start it with `clade serve`" in service
        assert [line.split()[1] for line in lines] == [
            "docker",
            "images",
            "broker",
            "database",
            "service",
            "disk",
        ]
