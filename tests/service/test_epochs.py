"""Epochs: the run driver changes the utility at a boundary, re-scores the best agents under it,
and selects on current-epoch scores only. Real driver, database and git archive; the test plays
the workers (tests/service/driver_world.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr
from sqlalchemy import select

from benchmarks.catalog import BenchmarkCatalog
from contracts.config import JudgeConfig, RunConfig
from contracts.jobs import EvaluateJob
from contracts.settings import Settings
from service.api.app import create_app
from service.db.models import Evaluation, Event, Run, StageScore
from service.driver.loop import RunDriver
from service.plan import plan_run, stored_plan
from tests.service.driver_world import T, World

JUDGE = {"model": "scripted-judge", "rubric": "The change is minimal.", "threshold": 0.7}


def epoch_run(world: World, **changes: Any) -> str:
    """Epoch 0 scores on T[0]; epoch 1 (after 2 steps) on T[2] and T[3], with a judge."""
    return world.start(
        **{
            "stages": [{"tasks": T[:1]}],
            "budget": {"max_children": 4},
            "parallelism": 2,
            "epochs": [{"after_steps": 2, "stages": [{"tasks": T[2:]}], "judge": JUDGE, "rescore_top_k": 1}],
        }
        | changes
    )


def answer_all(world: World, resolved: dict[str, bool]) -> None:
    """Answer every evaluation job sent since the last call: `resolved` by agent id (default False)."""
    _, evaluate = world.outbox.take()
    for job in evaluate:
        world.answer(job, resolved=resolved.get(job.agent_id, False))


def through_the_boundary(
    world: World, *, max_children: int = 4, held: list[EvaluateJob] | None = None
) -> dict[str, str]:
    """Seed 0/1, child c1 1/1, child c2 0/1 in epoch 0; the boundary after step 2; the rescored
    agents answered (seed 2/2, c1 0/2), c1's kept in `held` instead when it is given. Returns
    the agents by name."""
    run_id = epoch_run(world, budget={"max_children": max_children})
    world.driver.tick()
    answer_all(world, {})  # the seed: 0/1
    world.driver.tick()
    improve, _ = world.outbox.take()
    assert [job.parent_id for job in improve] == [world.seed, world.seed]  # two slots, two steps
    c1 = world.make_child(improve[0])
    world.driver.tick()
    answer_all(world, {c1: True})
    world.driver.tick()
    # c1 is admitted and a slot is free, but the boundary is due after 2 steps: none opens.
    assert world.member(run_id, c1).status == "admitted"
    assert world.outbox.take()[0] == []
    assert world.run(run_id).epoch == 0  # step 2 is still in flight
    c2 = world.make_child(improve[1])
    world.driver.tick()
    answer_all(world, {})
    world.driver.tick()  # c2 admitted with 0/1: nothing in flight, so epoch 1 begins
    assert world.run(run_id).epoch == 1
    improve, evaluate = world.outbox.take()
    assert improve == []  # no agent has a score in epoch 1 yet
    # The best of epoch 0 (c1) and the seed are re-scored on epoch 1's stages, with its judge.
    assert sorted((job.agent_id, job.task_id) for job in evaluate) == sorted(
        (agent, task) for agent in (c1, world.seed) for task in T[2:]
    )
    assert all(job.judge == JudgeConfig.model_validate(JUDGE) for job in evaluate)
    for job in evaluate:
        if held is not None and job.agent_id == c1:
            held.append(job)
        else:
            world.answer(job, resolved=job.agent_id == world.seed)
    world.driver.tick()
    return {"run": run_id, "c1": c1, "c2": c2}


def test_an_epoch_boundary_rescores_the_best_agents_and_selection_sees_only_the_new_scores(
    world: World, tmp_path: Path
) -> None:
    named = through_the_boundary(world)
    run_id, c1, c2 = named["run"], named["c1"], named["c2"]
    seed = world.member(run_id, world.seed)
    rescored = world.member(run_id, c1)
    left_behind = world.member(run_id, c2)
    assert (seed.epoch, seed.score, seed.resolved, seed.attempted) == (1, 1.0, 2, 2)
    assert (rescored.epoch, rescored.score, rescored.status) == (1, 0.0, "admitted")
    assert (left_behind.epoch, left_behind.score, left_behind.status) == (0, 0.0, "admitted")

    # Selection: c1 led epoch 0 with 1/1, but in epoch 1 the seed leads; c2 is no candidate.
    improve, _ = world.outbox.take()
    assert [job.parent_id for job in improve] == [world.seed, world.seed]
    c3 = world.make_child(improve[0])
    world.driver.tick()
    _, evaluate = world.outbox.take()
    assert sorted(job.task_id for job in evaluate) == sorted(
        T[2:]
    )  # a new child is scored on epoch 1's stages
    assert all(job.judge is not None for job in evaluate)

    with world.sessions() as session:
        rows = session.scalars(select(Evaluation).where(Evaluation.run_id == run_id)).all()
        by_agent = {
            agent: sorted((e.epoch, e.purpose, e.task_id) for e in rows if e.agent_id == agent)
            for agent in (world.seed, c1, c2, c3)
        }
        scores = session.scalars(
            select(StageScore).where(StageScore.agent_id == c1).order_by(StageScore.epoch)
        ).all()
        events = session.scalars(
            select(Event).where(Event.run_id == run_id, Event.kind.in_(["epoch_started", "agent_rescored"]))
        ).all()
    assert by_agent[c1] == [(0, "selection", T[0]), (1, "rescore", T[3]), (1, "rescore", T[2])]
    assert by_agent[c2] == [(0, "selection", T[0])]
    assert by_agent[c3] == [(1, "selection", T[3]), (1, "selection", T[2])]
    # Old epochs' stage scores stay, keyed by their epoch.
    assert [(s.epoch, s.stage, s.resolved, s.total) for s in scores] == [(0, 0, 1, 1), (1, 0, 0, 2)]
    started = [e.payload for e in events if e.kind == "epoch_started"]
    assert started == [
        {
            "epoch": 1,
            "after_steps": 2,
            "steps_opened": 2,
            "utility": {
                "version": 1,
                "stages": [{"tasks": 2, "threshold": 0.0}],
                "judge": JudgeConfig.model_validate(JUDGE).model_dump(mode="json"),
            },
            "rescore": [c1, world.seed],
        }
    ]
    assert sorted(
        (e.payload["agent_id"], e.payload["score"]) for e in events if e.kind == "agent_rescored"
    ) == (sorted([(c1, 0.0), (world.seed, 1.0)]))

    with TestClient(create_app(_settings(tmp_path))) as client:
        run = client.get(f"/api/runs/{run_id}").json()
        agent = client.get(f"/api/agents/{c1}").json()
        lineage = client.get(f"/api/runs/{run_id}/lineage").json()
    assert run["epoch"] == 1 and run["stage_tasks"] == [T[:1]]
    assert [(e["epoch"], e["after_steps"], e["started"]) for e in run["epochs"]] == [
        (0, 0, True),
        (1, 2, True),
    ]
    assert run["epochs"][1]["stages"] == [{"task_ids": T[2:], "threshold": 0.0}]
    assert run["epochs"][0]["judge"] is None and run["epochs"][1]["judge"]["rubric"] == JUDGE["rubric"]
    (in_run,) = agent["runs"]
    assert (in_run["epoch"], in_run["score"]) == (1, 0.0)
    assert [(s["epoch"], s["stage"], s["resolved"]) for s in in_run["stages"]] == [(0, 0, 1), (1, 0, 0)]
    assert [(e["epoch"], e["task_id"]) for e in in_run["evaluations"]] == [(0, T[0]), (1, T[3]), (1, T[2])]
    assert {node["id"]: node["epoch"] for node in lineage["nodes"]} == {
        world.seed: 1,
        c1: 1,
        c2: 0,
        c3: 1,
    }


def test_the_boundary_and_rescoring_replay_the_same(tmp_path: Path) -> None:
    """Two runs of the same story choose the same agents to re-score, the same parents after
    it, and a restarted driver sends nothing twice."""

    def story(root: Path) -> list[tuple[object, ...]]:
        root.mkdir()
        world = World(root)
        named = through_the_boundary(world)
        restarted = RunDriver(sessions=world.sessions, dispatcher=world.outbox, interval_s=0.1)
        restarted.tick()
        improve, evaluate = world.outbox.take()
        assert evaluate == []
        steps = {world.seed: 0, named["c1"]: 1, named["c2"]: 2}
        with world.sessions() as session:
            rows = session.scalars(
                select(Evaluation).where(Evaluation.run_id == named["run"]).order_by(Evaluation.created_at)
            ).all()
            trace: list[tuple[object, ...]] = [
                (steps[e.agent_id], e.task_id, e.epoch, e.purpose, e.resolved) for e in rows
            ]
            started = session.scalars(select(Event).where(Event.kind == "epoch_started")).one()
        trace.append(tuple(steps[agent] for agent in started.payload["rescore"]))
        trace.append(tuple(steps[job.parent_id] for job in improve))
        return trace

    first, second = story(tmp_path / "a"), story(tmp_path / "b")
    assert first == second
    assert first[-2:] == [(1, 0), (0, 0)]  # c1 and the seed re-scored; the seed chosen twice after


def test_a_run_whose_steps_are_done_waits_for_its_rescoring_before_it_completes(world: World) -> None:
    held: list[EvaluateJob] = []
    named = through_the_boundary(world, max_children=3, held=held)
    run_id = named["run"]
    # The seed is scored in epoch 1 while c1 is still being re-scored: selection goes on.
    improve, _ = world.outbox.take()
    assert [job.parent_id for job in improve] == [world.seed]  # the last step of three
    assert world.member(run_id, named["c1"]).epoch == 0
    world.make_child(improve[0])
    world.driver.tick()
    answer_all(world, {})
    world.driver.tick()
    assert world.run(run_id).status == "running"  # every step is done; c1's re-scoring is not
    for job in held:
        world.answer(job, resolved=True)
    world.driver.tick()
    run = world.run(run_id)
    assert run.status == "completed"
    assert (run.stop_reason or "").startswith("budget: max_children reached (3 of 3 steps attempted")
    c1 = world.member(run_id, named["c1"])
    assert (c1.epoch, c1.score) == (1, 1.0)


def test_the_dry_run_bound_counts_each_epochs_stages_and_rescorings(world: World, tmp_path: Path) -> None:
    config = {
        "seed_agent": world.seed,
        "stages": [{"tasks": T[:1]}],
        "budget": {"max_children": 4},
        "epochs": [{"after_steps": 2, "stages": [{"tasks": T[1:]}], "rescore_top_k": 1}],
    }
    with TestClient(create_app(_settings(tmp_path))) as client:
        response = client.post("/api/runs/plan", json=config, headers={"Authorization": "Bearer test-token"})
    assert response.status_code == 200, response.text
    # Epoch 0: the seed and 2 children on 1 task; epoch 1: 2 children and 2 re-scored on 3 tasks.
    assert response.json()["estimate"]["evaluations_max"] == 3 * 1 + 4 * 3


def test_without_epochs_jobs_carry_no_judge_and_the_run_stays_in_epoch_0(world: World) -> None:
    run_id = world.start(stages=[{"tasks": T[:1]}], budget={"max_children": 2})
    world.driver.tick()
    _, evaluate = world.outbox.take()
    assert [job.judge for job in evaluate] == [None]
    world.answer(evaluate[0], resolved=True)
    world.driver.tick()
    assert world.run(run_id).epoch == 0 and world.member(run_id, world.seed).epoch == 0


def _settings(root: Path) -> Settings:
    placeholder = SecretStr("test-token")
    return Settings(
        data_dir=root,
        broker_url=None,
        run_driver_enabled=False,
        admin_token=placeholder,
        worker_token=placeholder,
        read_token=placeholder,
    )


@pytest.mark.parametrize(
    ("epochs", "loc", "message"),
    [
        (
            [{"after_steps": 2, "judge": JUDGE}, {"after_steps": 2, "judge": JUDGE}],
            ["body", "epochs", 1, "after_steps"],
            "epochs must begin in order",
        ),
        ([{"after_steps": 4, "judge": JUDGE}], ["body", "epochs", 0, "after_steps"], "max_children"),
        (
            [{"after_steps": 1, "stages": [{"tasks": ["no-such-task"]}]}],
            ["body", "epochs", 0, "stages", 0, "tasks"],
            "no-such-task",
        ),
        ([{"after_steps": 1}], ["body", "epochs", 0], "give 'stages', 'judge' or both"),
        (
            [{"after_steps": 1, "judge": {"rubric": "x", "threshold": 2}}],
            ["body", "epochs", 0, "judge", "threshold"],
            "less than or equal to 1",
        ),
    ],
)
def test_a_bad_epoch_is_refused_at_its_field(
    world: World, tmp_path: Path, epochs: list[dict[str, Any]], loc: list[object], message: str
) -> None:
    config = {"seed_agent": world.seed, "budget": {"max_children": 4}, "epochs": epochs}
    with TestClient(create_app(_settings(tmp_path))) as client:
        headers = {"Authorization": "Bearer test-token"}
        for path in ("/api/runs", "/api/runs/plan"):
            response = client.post(path, json=config, headers=headers)
            assert response.status_code == 422, response.text
            (issue,) = response.json()["detail"]
            assert issue["loc"] == loc and message in issue["msg"], issue


def test_epoch_stages_are_fixed_when_the_run_is_created_and_read_back_the_same() -> None:
    """Sampled epoch stages are drawn once with the run's seed and stored with the run; an epoch
    that gives no stages keeps the last ones, one that gives no judge keeps the last judge."""
    config = RunConfig.model_validate(
        {
            "seed_agent": "a" * 40,
            "stages": [{"tasks": T[:2]}],
            "budget": {"max_children": 10},
            "rng_seed": 7,
            "epochs": [
                {"after_steps": 2, "stages": [{"sample": 3}, {"subset": "mini-5", "threshold": 0.4}]},
                {"after_steps": 5, "judge": JUDGE, "rescore_top_k": 2},
                {"after_steps": 8, "stages": [{"tasks": [T[3]]}]},
            ],
        }
    )
    plan = plan_run(config, catalog=BenchmarkCatalog(), visibility_timeout_s=7200)
    again = plan_run(config, catalog=BenchmarkCatalog(), visibility_timeout_s=7200)
    assert plan.stage_tasks == again.stage_tasks  # the same draw
    assert [len(ids) for ids in plan.stage_tasks] == [2, 3, 5, 1]  # epoch 0, epoch 1 (2 stages), epoch 3
    run = Run(id="epochs-plan-test", config=config.model_dump(mode="json"), stage_tasks=plan.stage_tasks)
    stored = stored_plan(run)
    assert stored.epochs == plan.epochs and stored.stages == plan.stages
    one, two, three = stored.epochs[1:]
    assert two.stages == one.stages and two.judge == JudgeConfig.model_validate(JUDGE)
    assert three.stages[0].task_ids == (T[3],) and three.judge == two.judge
    assert [e.after_steps for e in stored.epochs] == [0, 2, 5, 8]
