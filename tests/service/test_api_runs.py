"""Runs over HTTP against the service app, on SQLite and on Postgres."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from service.api import views
from service.archive.git_store import GitStore
from service.db.models import Agent, RunAgent
from tests.servers import AppService
from tests.service.helpers import config, row_counts


def test_create_show_and_list_runs(service: AppService, seed_id: str) -> None:
    with service.admin as client:
        created = client.post("/api/runs", json=config(seed_id))
        assert created.status_code == 201, created.text
        run = created.json()
        assert run["status"] == "running"
        assert run["config"]["budget"]["max_usd"] == 1.5
        assert run["budget"]["max_children"] == 5
        assert run["progress"]["children"] == 0
        for i in range(3):
            client.post("/api/runs", json=config(seed_id, name=f"more-{i}")).raise_for_status()
    with service.anonymous as reader:
        shown = reader.get(f"/api/runs/{run['id']}").json()
        assert shown["id"] == run["id"] and shown["seed_agent_id"] == seed_id
        page = reader.get("/api/runs", params={"limit": 2, "offset": 1}).json()
        assert page["total"] == 4 and page["limit"] == 2 and len(page["items"]) == 2
        everything = reader.get("/api/runs", params={"limit": 10}).json()["items"]
        assert {r["name"] for r in everything} == {"demo", "more-0", "more-1", "more-2"}
        lineage = reader.get(f"/api/runs/{run['id']}/lineage").json()
        assert [n["id"] for n in lineage["nodes"]] == [seed_id]


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"budget": {"max_usd": -1}}, ["body", "budget", "max_usd"]),
        ({"budget": {"max_chldren": 3}}, ["body", "budget", "max_chldren"]),
        ({"stages": [{"tasks": ["a"], "threshold": 1.5}]}, ["body", "stages", 0, "threshold"]),
        ({"parallelism": 0}, ["body", "parallelism"]),
        ({"improver": {"mode": "fixed"}}, ["body", "improver"]),
        (
            {"selection": {"strategy": "best", "params": {"lambda": "high"}}},
            ["body", "selection", "params", "lambda"],
        ),
        ({"surprise": True}, ["body", "surprise"]),
        ({"stages": [{"tasks": ["clade-mini__textkit-1", "nope"]}]}, ["body", "stages", 0, "tasks"]),
        ({"stages": [{"subset": "all"}, {"subset": "mini-500"}]}, ["body", "stages", 1, "subset"]),
        ({"benchmark": {"name": "no-such-bench"}}, ["body", "benchmark", "name"]),
        ({"selection": {"strategy": "roulette"}}, ["body", "selection", "strategy"]),
        (
            {"selection": {"strategy": "hgm", "params": {"alpah": 2}}},
            ["body", "selection", "params", "alpah"],
        ),
        (
            {"benchmark": {"name": "swebench", "options": {"datset": "x.jsonl"}}},
            ["body", "benchmark", "options", "datset"],
        ),
        (
            {"benchmark": {"name": "polyglot", "options": {"exercises": ["no-such-exercise"]}}},
            ["body", "benchmark", "options", "exercises", 0],
        ),
        ({"limits": {"solve_timeout_s": 7200}}, ["body", "limits"]),
        ({"stages": [{"tasks": ["clade-mini__textkit-1"]}] * 21}, ["body", "stages"]),
        (
            {"epochs": [{"after_steps": 2, "stages": [{"tasks": ["clade-mini__textkit-1"]}] * 21}]},
            ["body", "epochs", 0, "stages"],
        ),
        # Held-out tasks must be tasks no stage uses (the second stage here uses them all).
        (
            {"evaluation": {"heldout": {"tasks": ["clade-mini__textkit-1"]}}},
            ["body", "evaluation", "heldout", "tasks"],
        ),
        ({"evaluation": {"heldout": {"subset": "mini-5"}}}, ["body", "evaluation", "heldout", "subset"]),
        ({"evaluation": {"heldout": {}}}, ["body", "evaluation", "heldout"]),
    ],
)
def test_invalid_config_is_422_with_field_path_and_writes_nothing(
    service: AppService, seed_id: str, change: dict[str, Any], path: list[Any]
) -> None:
    before = row_counts(service.env["CLADE_DATABASE_URL"])
    with service.admin as client:
        response = client.post("/api/runs", json=config(seed_id, **change))
    assert response.status_code == 422, response.text
    locations = [error["loc"] for error in response.json()["detail"]]
    assert path in locations
    assert row_counts(service.env["CLADE_DATABASE_URL"]) == before


def test_unknown_seed_is_422_at_seed_agent(service: AppService, seed_id: str) -> None:
    with service.admin as client:
        response = client.post("/api/runs", json=config("0" * 40))
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "seed_agent"]


def test_state_changes_and_conflicts(service: AppService, seed_id: str) -> None:
    with service.admin as client:
        run_id = client.post("/api/runs", json=config(seed_id)).json()["id"]
        assert client.post(f"/api/runs/{run_id}/resume").status_code == 409
        assert client.post(f"/api/runs/{run_id}/pause").json()["status"] == "paused"
        assert client.post(f"/api/runs/{run_id}/pause").status_code == 409
        assert client.post(f"/api/runs/{run_id}/resume").json()["status"] == "running"
        cancelled = client.post(f"/api/runs/{run_id}/cancel").json()
        assert cancelled["status"] == "cancelled" and cancelled["finished_at"] is not None
        conflict = client.post(f"/api/runs/{run_id}/resume")
        assert conflict.status_code == 409
        assert "cancelled" in conflict.json()["detail"]
        assert client.post("/api/runs/nope/pause").status_code == 404
        assert client.get("/api/runs/nope").status_code == 404


def test_writes_need_the_admin_token(service: AppService, seed_id: str) -> None:
    with service.anonymous as anonymous:
        assert anonymous.post("/api/runs", json=config(seed_id)).status_code == 401
        assert anonymous.get("/api/runs").status_code == 200
    with service.worker as worker:
        assert worker.post("/api/runs", json=config(seed_id)).status_code == 401
    with service.anonymous as anonymous:
        assert anonymous.get(f"/api/worker/agents/{seed_id}/code").status_code == 401


def test_lineage_built_in_the_database_matches_the_rows(service: AppService, seed_id: str) -> None:
    """On Postgres the lineage's JSON is built by the database: same nodes, values and order."""
    with service.admin as client:
        run = client.post("/api/runs", json=config(seed_id)).json()
    engine = create_engine(service.database_url)
    tree = GitStore(service.data_dir / "archive.git").tree_of(seed_id)
    whole = datetime(2099, 1, 2, 3, 4, 5, tzinfo=UTC)  # no fraction: isoformat() leaves it out
    children = [
        ("1" * 40, seed_id, "admitted", None, 0.8444218515250481, 2, whole),
        ("2" * 40, "1" * 40, "rejected", 'fails "quoted" \\ and ünïcode\n', None, 0, whole),
        ("3" * 40, "1" * 40, "evaluating", None, 1 / 3, 1, whole + timedelta(microseconds=7)),
    ]
    with Session(engine) as session:
        for step, (agent, parent, status, reason, score, stage, at) in enumerate(children, start=1):
            session.add(Agent(id=agent, parent_id=parent, kind="child", tree_id=tree, run_id=run["id"]))
            session.flush()
            session.add(
                RunAgent(
                    run_id=run["id"],
                    agent_id=agent,
                    parent_id=parent,
                    status=status,
                    reason=reason,
                    score=score,
                    stage_reached=stage,
                    step_number=step,
                    created_at=at,
                )
            )
        session.commit()
        expected = views.lineage(session, run_id=run["id"])
    engine.dispose()
    with service.anonymous as reader:
        got = reader.get(f"/api/runs/{run['id']}/lineage").json()
        live = reader.get(f"/api/runs/{run['id']}/lineage/live").json()
    assert got == expected
    assert [n["id"] for n in got["nodes"]][1:] == ["1" * 40, "2" * 40, "3" * 40]
    assert got["nodes"][3]["created_at"] == "2099-01-02T03:04:05.000007+00:00"
    assert live["nodes"] == expected["nodes"] and isinstance(live["cursor"], int)
