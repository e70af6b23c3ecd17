"""`POST /api/runs/plan` and `clade run start --dry-run`: the plan and its estimate, nothing stored."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from rich.console import Console
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from cli.context import CliContext
from cli.runs import print_plan
from service.db.models import Evaluation, LLMUsage, Step
from tests.helpers import import_seed
from tests.servers import AppService, ServiceProcess
from tests.service.helpers import config, row_counts, start_run


def test_plan_lists_stages_and_bounds_and_stores_nothing(service: AppService, seed_id: str) -> None:
    body = config(seed_id, budget={"max_children": 5, "max_usd": 1.5, "max_wall_time_s": 600})
    counts = row_counts(service.database_url)
    with service.admin as client:
        answer = client.post("/api/runs/plan", json=body)
        assert answer.status_code == 200, answer.text
        plan = answer.json()
        assert client.get("/api/runs").json()["total"] == 0
    assert row_counts(service.database_url) == counts
    stages = plan["stages"]
    assert stages[0]["tasks"] == 2 and stages[0]["threshold"] == 0.5
    assert stages[0]["task_ids"] == ["clade-mini__textkit-1", "clade-mini__ledger-1"]
    tasks = sum(s["tasks"] for s in stages)
    estimate = plan["estimate"]
    assert estimate["evaluations_max"] == 6 * tasks and estimate["improve_jobs_max"] == 5
    upper = estimate["upper_bound"]
    assert upper["usd"] == 1.5 and upper["tokens"] is None and upper["wall_time_s"] == 600
    assert estimate["expected"] is None and "no finished evaluation of clade-mini" in estimate["no_history"]
    assert plan["selection"]["strategy"] == "score_child_prop" and plan["parallelism"] == 2


def test_plan_refuses_what_a_run_refuses(service: AppService, seed_id: str) -> None:
    with service.admin as client:
        bad_subset = client.post("/api/runs/plan", json=config(seed_id, stages=[{"subset": "nope"}]))
        unknown_seed = client.post("/api/runs/plan", json=config("0" * 40))
    assert bad_subset.status_code == 422
    assert bad_subset.json()["detail"][0]["loc"] == ["body", "stages", 0, "subset"]
    assert unknown_seed.status_code == 422 and unknown_seed.json()["detail"][0]["loc"] == [
        "body",
        "seed_agent",
    ]
    with service.anonymous as anonymous:
        assert anonymous.post("/api/runs/plan", json=config(seed_id)).status_code == 401


def add_history(database_url: str, *, run_id: str, agent_id: str) -> None:
    """Two finished evaluations (10 s, 0.02 USD, 300 tokens each) and one finished step (60 s)
    whose improve and diagnose calls cost 0.1 USD and 1,000 tokens."""
    engine = create_engine(database_url)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    with Session(engine) as session:
        for index, task in enumerate(["clade-mini__textkit-1", "clade-mini__ledger-1"]):
            session.add(
                Evaluation(
                    id=f"history-{index}",
                    run_id=run_id,
                    agent_id=agent_id,
                    task_id=task,
                    stage=0,
                    status="done",
                    resolved=False,
                    prompt_tokens=250,
                    completion_tokens=50,
                    cost_usd=0.02,
                    dispatched_at=start,
                    finished_at=start + timedelta(seconds=10),
                )
            )
        session.add(
            Step(
                id="history-step",
                run_id=run_id,
                number=1,
                parent_id=agent_id,
                status="rejected",
                dispatched_at=start,
                finished_at=start + timedelta(seconds=60),
            )
        )
        for purpose, usd in (("diagnose", 0.04), ("improve", 0.06)):
            session.add(
                LLMUsage(
                    id=f"history-{purpose}",
                    run_id=run_id,
                    step_id="history-step",
                    purpose=purpose,
                    model="scripted",
                    prompt_tokens=400,
                    completion_tokens=100,
                    cost_usd=usd,
                )
            )
        session.commit()
    engine.dispose()


def test_expected_figures_come_from_earlier_evaluations_of_the_same_benchmark_and_model(
    service: AppService, seed_id: str
) -> None:
    earlier = start_run(service, seed_id)
    add_history(service.database_url, run_id=earlier, agent_id=seed_id)
    body = config(seed_id, budget={"max_children": 3, "max_usd": 100.0}, parallelism=1)
    with service.admin as client:
        plan = client.post("/api/runs/plan", json=body).json()
        other_model = client.post(
            "/api/runs/plan", json=body | {"models": {"solve": "scripted-other"}}
        ).json()
    tasks = sum(s["tasks"] for s in plan["stages"])
    expected = plan["estimate"]["expected"]
    # The earlier seed reached 2 of its run's `tasks` tasks; 4 agents (seed and 3 children) now.
    evaluations = round(4 * tasks * 2 / tasks)
    assert expected["evaluations"] == evaluations == 8
    assert expected["usd"] == pytest.approx(evaluations * 0.02 + 3 * 0.1)
    assert expected["tokens"] == evaluations * 300 + 3 * 1000
    assert expected["wall_time_s"] == pytest.approx(evaluations * 10 + 3 * 60)
    assert "2 evaluations of 1 agents and 1 steps in 1 earlier runs" in expected["basis"]
    assert plan["estimate"]["upper_bound"]["usd"] == 100.0
    assert other_model["estimate"]["expected"] is None


def test_print_plan_shows_stages_limits_and_both_figures(service: AppService, seed_id: str) -> None:
    earlier = start_run(service, seed_id)
    add_history(service.database_url, run_id=earlier, agent_id=seed_id)
    with service.admin as client:
        plan = client.post("/api/runs/plan", json=config(seed_id)).json()
    screen = io.StringIO()
    cli = CliContext(
        url="", token=None, as_json=False, console=Console(file=screen, width=200, color_system=None)
    )
    print_plan(cli, plan)
    text = screen.getvalue()
    assert text.startswith("dry run: nothing started. Run demo on clade-mini")
    assert "stage" in text and "0.50" in text
    assert "selection: score_child_prop; improver: self" in text
    assert "budget: 5 children, $1.50, unlimited tokens" in text
    assert (
        f"upper bound: {plan['estimate']['evaluations_max']} evaluations, 5 improve jobs; cost $1.50" in text
    )
    assert "expected: $" in text and "(from 2 evaluations" in text


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_cli_dry_run_starts_nothing(live_service: ServiceProcess, tmp_path: Path) -> None:
    seed_id = import_seed(live_service, tmp_path)
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(config(seed_id)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLADE_")}
    env |= {
        "CLADE_SERVICE_URL": live_service.url,
        "CLADE_DATA_DIR": str(live_service.data_dir),
        "COLUMNS": "200",
    }
    result = subprocess.run(
        [sys.executable, "-m", "cli.main", "run", "start", str(path), "--dry-run"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "dry run: nothing started" in result.stdout and "upper bound:" in result.stdout
    with live_service.admin as client:
        assert client.get("/api/runs").json()["total"] == 0
