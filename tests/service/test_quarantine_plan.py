"""A run's `quarantine`: tasks caught with a wrong grader are kept out of its stages and
held-out draws (or kept in when the run says so), and a bad quarantine is a 422 at its field."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from benchmarks.catalog import BenchmarkCatalog
from cli.runs import quarantine_line
from contracts.config import ConfigFieldError, RunConfig
from contracts.quarantine import QuarantineFile, TaskEvidence, TrialOutcome
from service.plan import RunPlan, plan_run
from tests.servers import AppService
from tests.service.helpers import config as api_config

SEED = "a" * 40
TEXTKIT, LEDGER, SPANLIB = "clade-mini__textkit-1", "clade-mini__ledger-1", "clade-mini__spanlib-1"


@pytest.fixture(scope="module")
def catalog() -> BenchmarkCatalog:
    return BenchmarkCatalog()


def write_quarantine(path: Path, ids: list[str], benchmark: str = "clade-mini") -> Path:
    trial = TrialOutcome(
        trial=1, gold_resolved=False, empty_resolved=False, gold_reason="not resolved", empty_reason="x"
    )
    record = QuarantineFile(
        benchmark=benchmark,
        trials=2,
        checked_at=datetime(2026, 12, 2, tzinfo=UTC),
        tasks={task: TaskEvidence(evidence=["the gold patch flips"], trials=[trial]) for task in ids},
    )
    path.write_text(record.model_dump_json())
    return path


def plan(catalog: BenchmarkCatalog, **changes: Any) -> RunPlan:
    config = RunConfig.model_validate({"seed_agent": SEED} | changes)
    return plan_run(config, catalog=catalog, visibility_timeout_s=7200)


def all_ids(catalog: BenchmarkCatalog) -> list[str]:
    return [task.instance_id for task in catalog.get(RunConfig(seed_agent=SEED).benchmark).tasks()]


def test_quarantined_tasks_are_kept_out_of_stages_and_held_out_draws(
    catalog: BenchmarkCatalog, tmp_path: Path
) -> None:
    file = write_quarantine(tmp_path / "q.json", [LEDGER, TEXTKIT])
    planned = plan(
        catalog,
        stages=[{"subset": "mini-5"}, {"sample": 6}],
        evaluation={"heldout": {}},
        quarantine={"file": str(file), "tasks": [SPANLIB]},
    )
    # The stored configuration lists every quarantined id, in the benchmark's order.
    assert planned.config.quarantine is not None
    assert planned.config.quarantine.tasks == [TEXTKIT, SPANLIB, LEDGER]
    assert planned.config.quarantine.file == str(file)
    kept_out = {TEXTKIT, SPANLIB, LEDGER}
    staged = {task for stage in planned.stage_tasks for task in stage}
    assert staged and not staged & kept_out
    assert planned.heldout is not None and planned.heldout.tasks
    assert not set(planned.heldout.tasks) & kept_out
    # Held out: every task no stage uses, but the quarantined ones.
    assert set(planned.heldout.tasks) == set(all_ids(catalog)) - staged - kept_out
    # A later epoch's own stages leave them out too.
    with_epoch = plan(
        catalog,
        stages=[{"subset": "mini-5"}],
        epochs=[{"after_steps": 2, "stages": [{"subset": "mini-5"}]}],
        quarantine={"tasks": [LEDGER]},
    )
    assert [LEDGER in stage for stage in with_epoch.stage_tasks] == [False, False]
    # Without the quarantine, the first stage's subset has those tasks.
    unquarantined = plan(catalog, stages=[{"subset": "mini-5"}])
    assert {TEXTKIT, SPANLIB, LEDGER} <= set(unquarantined.stage_tasks[0])


def test_include_keeps_them_in_and_lists_them(catalog: BenchmarkCatalog, tmp_path: Path) -> None:
    file = write_quarantine(tmp_path / "q.json", [LEDGER])
    planned = plan(
        catalog, stages=[{"tasks": [LEDGER, TEXTKIT]}], quarantine={"file": str(file), "include": True}
    )
    assert planned.stage_tasks == [[LEDGER, TEXTKIT]]
    assert planned.config.quarantine is not None and planned.config.quarantine.tasks == [LEDGER]


def refused(catalog: BenchmarkCatalog, **changes: Any) -> ConfigFieldError:
    with pytest.raises(ConfigFieldError) as error:
        plan(catalog, **changes)
    return error.value


def test_a_bad_quarantine_is_refused_at_its_field(catalog: BenchmarkCatalog, tmp_path: Path) -> None:
    missing = refused(catalog, quarantine={"file": str(tmp_path / "none.json")})
    assert missing.field == "quarantine.file" and "none.json: cannot read it" in str(missing)
    (tmp_path / "bad.json").write_text(json.dumps({"benchmark": "clade-mini", "tasks": {}}))
    malformed = refused(catalog, quarantine={"file": str(tmp_path / "bad.json")})
    assert malformed.field == "quarantine.file" and "not a quarantine file" in str(malformed)
    assert "trials: Field required" in str(malformed)
    other = write_quarantine(tmp_path / "other.json", [LEDGER], benchmark="polyglot")
    wrong = refused(catalog, quarantine={"file": str(other)})
    assert wrong.field == "quarantine.file" and "a quarantine of 'polyglot', not of 'clade-mini'" in str(
        wrong
    )
    stray = write_quarantine(tmp_path / "stray.json", [LEDGER, "clade-mini__nope-9"])
    unknown = refused(catalog, quarantine={"file": str(stray)})
    assert unknown.field == "quarantine.file" and "clade-mini__nope-9" in str(unknown)
    given = refused(catalog, quarantine={"tasks": ["nope"]})
    assert given.field == "quarantine.tasks" and "unknown task(s) of clade-mini: nope" in str(given)


def test_a_stage_or_held_out_set_naming_a_quarantined_task_is_refused(catalog: BenchmarkCatalog) -> None:
    named = refused(catalog, stages=[{"tasks": [TEXTKIT, LEDGER]}], quarantine={"tasks": [LEDGER]})
    assert named.field == "stages.0.tasks" and "quarantined task(s) named: clade-mini__ledger-1" in str(named)
    assert "quarantine.include: true" in str(named)
    held = refused(
        catalog,
        stages=[{"tasks": [TEXTKIT]}],
        evaluation={"heldout": {"tasks": [LEDGER]}},
        quarantine={"tasks": [LEDGER]},
    )
    assert held.field == "evaluation.heldout.tasks"
    emptied = refused(catalog, stages=[{"subset": "mini-5"}], quarantine={"tasks": all_ids(catalog)})
    assert emptied.field == "stages.0" and "once the quarantined tasks are kept out" in str(emptied)


def test_over_http_422_at_the_field_and_the_run_lists_its_quarantine(
    service: AppService, seed_id: str, tmp_path: Path
) -> None:
    with service.admin as client:
        missing = client.post(
            "/api/runs", json=api_config(seed_id, quarantine={"file": str(tmp_path / "no.json")})
        )
        assert missing.status_code == 422, missing.text
        assert ["body", "quarantine", "file"] in [error["loc"] for error in missing.json()["detail"]]
        file = write_quarantine(tmp_path / "q.json", [SPANLIB])
        planned = client.post("/api/runs/plan", json=api_config(seed_id, quarantine={"file": str(file)}))
        assert planned.status_code == 200, planned.text
        assert planned.json()["quarantine"]["tasks"] == [SPANLIB]
        created = client.post("/api/runs", json=api_config(seed_id, quarantine={"file": str(file)}))
        assert created.status_code == 201, created.text
        run = created.json()
    assert run["config"]["quarantine"] == {"file": str(file), "tasks": [SPANLIB], "include": False}
    assert all(SPANLIB not in stage for stage in run["stage_tasks"])
    assert len(run["stage_tasks"][1]) == len(all_ids(BenchmarkCatalog())) - 1


def test_the_run_show_line_lists_what_the_run_kept_out() -> None:
    assert quarantine_line(None) is None
    kept_out = quarantine_line({"file": "/q.json", "tasks": [SPANLIB, LEDGER], "include": False})
    assert kept_out == (
        f"quarantined tasks (from /q.json): 2 kept out of every stage and held-out set: {SPANLIB}, {LEDGER}"
    )
    kept_in = quarantine_line({"file": None, "tasks": [LEDGER], "include": True})
    assert kept_in == f"quarantined tasks: 1, kept in the pool (quarantine.include): {LEDGER}"
