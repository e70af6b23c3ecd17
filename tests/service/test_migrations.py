"""Data migrations: a database written by an older Clade reads back through today's records."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import sessionmaker

from contracts.records import EvaluationResult
from service.db.migrate import upgrade
from service.leases import Reserved, grant, outstanding, settle
from tests.servers import fresh_postgres_database

NOW = datetime(2026, 11, 1, tzinfo=UTC)


def _legacy_rows(connection: sa.Connection) -> None:
    """What 0001-era Clade wrote for an evaluation that no worker answered, next to a real result."""
    tables = sa.MetaData()
    tables.reflect(connection, only=["agents", "runs", "evaluations"])
    agent = "a" * 40
    connection.execute(
        tables.tables["agents"].insert(),
        {"id": agent, "kind": "seed", "tree_id": "t" * 40, "manifest": {}, "created_at": NOW},
    )
    run = {"name": "r", "config": {}, "stage_tasks": [], "status": "running", "active_seconds": 0}
    connection.execute(
        tables.tables["runs"].insert(), run | {"id": "run1", "seed_agent_id": agent, "created_at": NOW}
    )
    results = {
        "lost": {"failure": "no worker answered after 3 dispatches"},
        "graded": EvaluationResult(resolved=True, grade_reason="resolved").model_dump(mode="json"),
    }
    common = {"run_id": "run1", "agent_id": agent, "stage": 0, "status": "done", "dispatches": 3}
    usage = {"prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0, "created_at": NOW}
    for evaluation_id, result in results.items():
        row = common | usage | {"id": evaluation_id, "task_id": evaluation_id, "result": result}
        connection.execute(tables.tables["evaluations"].insert(), row)


@pytest.fixture(params=["sqlite", "postgres"])
def blank_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database with no schema at all, so a test can stop its migrations where it wants."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'clade.db'}"
    else:
        with fresh_postgres_database() as url:
            yield url


def test_an_unanswered_evaluation_from_before_0002_reads_as_a_typed_result(blank_database: str) -> None:
    database_url = blank_database
    upgrade(database_url, "0001")
    engine = sa.create_engine(database_url)
    try:
        with engine.begin() as connection:
            _legacy_rows(connection)
        upgrade(database_url)
        with engine.connect() as connection:
            rows = [tuple(row) for row in connection.execute(sa.text("select id, result from evaluations"))]
    finally:
        engine.dispose()
    stored = {key: value if isinstance(value, str) else json.dumps(value) for key, value in rows}
    lost = EvaluationResult.model_validate_json(stored["lost"])
    assert (lost.resolved, lost.failure) == (False, None)
    assert lost.infrastructure_failure == "no worker answered after 3 dispatches"
    graded = EvaluationResult.model_validate_json(stored["graded"])
    assert (graded.resolved, graded.grade_reason) == (True, "resolved")


def test_a_database_from_before_0003_takes_leases_and_reserves_nothing(blank_database: str) -> None:
    database_url = blank_database
    upgrade(database_url, "0002")
    engine = sa.create_engine(database_url)
    try:
        with engine.begin() as connection:
            _legacy_rows(connection)  # a running run, evaluations answered long ago
        upgrade(database_url)
        sessions = sessionmaker(engine)
        with sessions.begin() as session:
            assert outstanding(session, run_id="run1") == Reserved(usd=0.0, tokens=0, leases=0)
            grant(session, run_id="run1", evaluation_id="graded", usd=0.5, tokens=None)
        with sessions.begin() as session:
            assert outstanding(session, run_id="run1") == Reserved(usd=0.5, tokens=0, leases=1)
            settle(session, usage=[], evaluation_id="graded")
        with sessions() as session:
            assert outstanding(session, run_id="run1").leases == 0
    finally:
        engine.dispose()
