"""`clade run experience` and how `clade run watch` shows migrations and pool versions."""

from __future__ import annotations

from typing import Any
from unittest import mock

from typer.testing import CliRunner

from cli.context import CliContext
from cli.events import describe_event
from cli.main import app

POOL = {"version": 2, "finished_steps": 3, "text": "Changes that helped:\n- step 1 [group 1]: +0.50"}


class FakeClient:
    def __init__(self) -> None:
        self.asked: list[tuple[str, dict[str, Any]]] = []

    def get(self, path: str, **params: Any) -> Any:
        self.asked.append((path, params))
        return POOL


def test_run_experience_prints_the_pool_as_is() -> None:
    client = FakeClient()
    with mock.patch.object(CliContext, "client", return_value=client):
        shown = CliRunner().invoke(app, ["--token", "t", "run", "experience", "r1", "--version", "2"])
        latest = CliRunner().invoke(app, ["--token", "t", "run", "experience", "r1"])
    assert shown.exit_code == 0, shown.output
    assert "experience pool version 2 (3 finished steps)" in shown.output
    assert "- step 1 [group 1]: +0.50" in shown.output  # rich markup is escaped, not eaten
    assert latest.exit_code == 0
    assert client.asked == [("/api/runs/r1/experience", {"version": 2}), ("/api/runs/r1/experience", {})]


def test_watch_describes_migrations_and_versions() -> None:
    stamp = "2026-11-30T21:00:00+00:00"
    migration = {"agent_id": "a" * 40, "from": 1, "to": 0, "step": 2}
    event = {"id": 7, "kind": "island_migration", "payload": migration, "created_at": stamp}
    assert describe_event(event) == f"21:00:00 agent {'a' * 12} migrates from island 1 to 0"
    version = {
        "run_id": "r1",
        "version": 3,
        "finished_steps": 5,
        "entries": [],
        "left_out": 5,
        "text": "long",
    }
    event = {"id": 8, "kind": "experience_updated", "payload": version, "created_at": stamp}
    assert describe_event(event) == "21:00:00 experience pool version 3 (5 finished steps)"
