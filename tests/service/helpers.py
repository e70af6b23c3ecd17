"""Helpers for the service tests: run configs, patches, and the archive in the states the driver leaves."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, func, select
from sqlalchemy.orm import Session

from service.db.models import Agent, Evaluation, LLMUsage, Run, RunAgent, Step
from service.steps import open_step
from tests.servers import ServiceClients


def open_step_in(database_url: str, *, run_id: str, parent_id: str) -> str:
    """Open a step the way the driver does (the driver itself comes with the evolution loop)."""
    engine = create_engine(database_url)
    with Session(engine) as session:
        step = open_step(session, run_id=run_id, parent_id=parent_id)
        session.commit()
        step_id = step.id
    engine.dispose()
    return step_id


def add_evaluation(database_url: str, *, run_id: str, agent_id: str, evaluation_id: str) -> None:
    """A pending evaluation, as the driver leaves one for a worker to answer."""
    engine = create_engine(database_url)
    with Session(engine) as session:
        session.add(
            Evaluation(
                id=evaluation_id,
                run_id=run_id,
                agent_id=agent_id,
                task_id="clade-mini__textkit-1",
                stage=0,
                status="pending",
            )
        )
        session.commit()
    engine.dispose()


def row_counts(database_url: str) -> dict[str, int]:
    engine = create_engine(database_url)
    with Session(engine) as session:
        counts = {
            model.__tablename__: session.scalar(select(func.count()).select_from(model)) or 0
            for model in (Agent, Run, RunAgent, Step, Evaluation, LLMUsage)
        }
    engine.dispose()
    return counts


def agent_ids(database_url: str) -> set[str]:
    engine = create_engine(database_url)
    with Session(engine) as session:
        ids = set(session.scalars(select(Agent.id)))
    engine.dispose()
    return ids


def config(seed_id: str, **overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "demo",
        "seed_agent": seed_id,
        "stages": [
            {"tasks": ["clade-mini__textkit-1", "clade-mini__ledger-1"], "threshold": 0.5},
            {"subset": "all"},
        ],
        "budget": {"max_children": 5, "max_usd": 1.5},
        "parallelism": 2,
        "rng_seed": 7,
    }
    return base | overrides


CORE = "".join(f"line {i}\n" for i in range(50))


def core_patch(index: int, text: str) -> str:
    """Replace line `index` of tiny/core.py (as the seed fixture writes it)."""
    lines = CORE.splitlines(keepends=True)
    start = max(0, index - 3)
    context = lines[start : index + 4]
    new = context.copy()
    new[index - start] = text + "\n"
    hunk = [f" {line}" if i != index - start else f"-{line}+{new[i]}" for i, line in enumerate(context)]
    header = f"@@ -{start + 1},{len(context)} +{start + 1},{len(new)} @@\n"
    return "--- a/tiny/core.py\n+++ b/tiny/core.py\n" + header + "".join(hunk)


def start_run(service: ServiceClients, seed_id: str) -> str:
    with service.admin as client:
        return str(client.post("/api/runs", json=config(seed_id)).json()["id"])


def agent_refs(data_dir: Path) -> set[str]:
    output = subprocess.run(
        [
            "git",
            "--git-dir",
            str(data_dir / "archive.git"),
            "for-each-ref",
            "--format=%(refname:lstrip=3)",
            "refs/heads/agents",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(output.split())


def make_patch(old: str, new: str, path: str = "tiny/core.py") -> str:
    """A real unified diff, made by git itself."""
    with tempfile.TemporaryDirectory() as tmp:
        a, b = Path(tmp) / "a", Path(tmp) / "b"
        a.write_text(old)
        b.write_text(new)
        result = subprocess.run(
            [
                "git",
                "diff",
                "--no-index",
                f"--src-prefix=a/{path}#",
                f"--dst-prefix=b/{path}#",
                str(a),
                str(b),
            ],
            capture_output=True,
            text=True,
        )
    lines = result.stdout.splitlines(keepends=True)
    body = [
        line
        for line in lines
        if line.startswith(("@@", "+", "-", " ")) and not line.startswith(("---", "+++"))
    ]
    return f"--- a/{path}\n+++ b/{path}\n" + "".join(body)


def refusal(response: httpx.Response) -> tuple[list[list[str | int]], str]:
    """A 422's places and messages: every 422 is a list of issues, each with `loc` and `msg`."""
    assert response.status_code == 422, response.text
    issues = response.json()["detail"]
    assert isinstance(issues, list) and issues, response.text
    return [issue["loc"] for issue in issues], "; ".join(issue["msg"] for issue in issues)
