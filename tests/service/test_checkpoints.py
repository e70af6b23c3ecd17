"""Honest picks at any time: `evaluation.checkpoints` with the real driver, on SQLite and PostgreSQL.

Workers are played by the test (see driver_world.py): it answers each job as the story needs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError
from sqlalchemy import select

from benchmarks.catalog import BenchmarkCatalog
from cli.events import describe_event
from cli.output import short
from contracts.config import ConfigFieldError, RunConfig
from contracts.intervals import simultaneous_z, wilson
from contracts.jobs import EvaluateJob
from service.db.models import Evaluation, Event
from service.driver.loop import RunDriver
from service.plan import plan_run
from service.queries import top_agents
from tests.service.driver_world import T, World, service_over


@pytest.fixture
def api(any_world: World, tmp_path: Path) -> Iterator[TestClient]:
    with service_over(tmp_path, any_world.url) as client:
        yield client


def tick_and_answer(world: World, resolved: set[tuple[str, str]]) -> list[EvaluateJob]:
    """Tick, and answer every evaluation sent: resolved iff (agent, task) is in `resolved`."""
    world.driver.tick()
    sent, world.outbox.sent_evaluate = world.outbox.sent_evaluate, []
    for job in sent:
        world.answer(job, resolved=(job.agent_id, job.task_id) in resolved)
    return sent


def kinds(world: World, run_id: str) -> list[str]:
    with world.sessions() as session:
        return [
            e.kind for e in session.scalars(select(Event).where(Event.run_id == run_id).order_by(Event.id))
        ]


def test_the_pick_is_scored_at_each_checkpoint_and_survives_a_restart(
    any_world: World, api: TestClient
) -> None:
    world = any_world
    run_id = world.start(
        stages=[{"tasks": T[:2]}],
        budget={"max_children": 2, "max_evaluations": 12},
        evaluation={"heldout": {"tasks": T[2:], "top_k": 1}, "checkpoints": [0.25, 1.0]},
    )
    seed = world.seed
    tick_and_answer(world, {(seed, T[0])})  # the seed: 1/2 on its stage; 2 of 12 evaluations
    world.driver.tick()  # the seed is admitted, the first step opens
    improve, _ = world.outbox.take()
    first = world.make_child(improve[0])
    # The child's 2 evaluations bring the spend to 4 of 12: past 0.25, the seed (the only agent
    # admitted) is scored on the 2 held-out tasks, charged to the budget.
    sent = tick_and_answer(world, {(first, T[0]), (first, T[1])})
    assert sorted((job.agent_id, job.task_id) for job in sent) == sorted(
        [(first, T[0]), (first, T[1]), (seed, T[2]), (seed, T[3])]
    )
    assert kinds(world, run_id).count("checkpoint_reached") == 1
    assert "checkpoint_scored" not in kinds(world, run_id)

    # A new driver (a restarted service): the checkpoint's state is the run's rows and events.
    world.driver = RunDriver(sessions=world.sessions, dispatcher=world.outbox, interval_s=0.1)
    world.driver.tick()  # the seed's held-out 0/2 is in: the pick is the seed, the only one measured
    with world.sessions() as session:
        assert top_agents(session, run_id=run_id, k=1) == [seed]
    checkpoint = api.get(f"/api/runs/{run_id}").json()["checkpoints"]
    assert [
        (c["fraction"], c["agent_id"], c["heldout_resolved"], c["heldout_total"]) for c in checkpoint
    ] == [(0.25, seed, 0, 2)]
    assert checkpoint[0]["spent"] == pytest.approx(4 / 12, abs=1e-4)
    assert checkpoint[0]["pick_agent_id"] == seed and checkpoint[0]["scored_at"] is not None
    assert checkpoint[0]["selection_low"] == pytest.approx(wilson(1, 2)[0], abs=1e-4)
    # One agent measured on the held-out tasks: its plain 95% interval.
    assert checkpoint[0]["heldout_high"] == pytest.approx(wilson(0, 2)[1], abs=1e-4)

    improve, _ = world.outbox.take()
    assert [job.parent_id for job in improve] == [first]  # 6 spent + 4 kept back < 12: a step opens
    second = world.make_child(improve[0])
    tick_and_answer(world, set())  # the second child: 0/2
    # Its children done, the run reaches the last checkpoint as its search stops: the best by
    # selection lower bound (the first child, 2/2) is scored, then the held-out phase reuses it.
    sent = tick_and_answer(world, {(first, T[2]), (first, T[3])})
    assert sorted((job.agent_id, job.task_id) for job in sent) == sorted([(first, T[2]), (first, T[3])])
    world.driver.tick()
    run = world.run(run_id)
    assert run.status == "completed"
    assert run.stop_reason.startswith("budget: max_children reached (2 of 2 steps attempted")
    with world.sessions() as session:
        spent = session.scalars(select(Evaluation).where(Evaluation.run_id == run_id)).all()
        assert len(spent) == 10  # within max_evaluations: 3 agents x 2 stage tasks, 2 agents x 2 held out
        assert top_agents(session, run_id=run_id, k=1) == [first]
    assert kinds(world, run_id).count("checkpoint_scored") == 2
    body = api.get(f"/api/runs/{run_id}").json()
    last = body["checkpoints"][-1]
    assert (last["fraction"], last["final"], last["agent_id"], last["pick_agent_id"]) == (
        1.0,
        True,
        first,
        first,
    )
    # The pick is now the better of two agents on the same held-out tasks: its interval holds
    # for both at once, wider than the plain one, and so does the other's.
    both = simultaneous_z(2)
    assert (last["heldout_low"], last["heldout_high"]) == pytest.approx(wilson(2, 2, both), abs=1e-4)
    assert last["heldout_low"] < wilson(2, 2)[0]
    assert [world.member(run_id, agent).heldout_compared for agent in (seed, first)] == [2, 2]
    progress = body["progress"]
    assert progress["best_agent_id"] == first and progress["best_heldout_score"] == 1.0
    assert world.member(run_id, second).heldout_total is None


def test_the_checkpoints_keep_their_evaluations_back_from_the_budget(any_world: World) -> None:
    world = any_world
    # 2 checkpoints and a held-out phase of 1 agent, 2 tasks each: 6 of the 8 evaluations kept back.
    run_id = world.start(
        stages=[{"tasks": T[:2]}],
        budget={"max_children": 10, "max_evaluations": 8},
        evaluation={"heldout": {"tasks": T[2:], "top_k": 1}, "checkpoints": [0.5, 1.0]},
    )
    tick_and_answer(world, {(world.seed, T[0])})
    # 2 spent + 6 kept back: no step opens, the search is over before either checkpoint is
    # crossed, so both are reached at its stop and the seed is scored on the held-out tasks.
    world.driver.tick()
    improve, sent = world.outbox.take()
    assert improve == []
    assert sorted(job.task_id for job in sent) == sorted(T[2:])
    for job in sent:
        world.answer(job, resolved=job.task_id == T[2])
    world.driver.tick()
    run = world.run(run_id)
    assert (run.status, run.stop_reason) == (
        "completed",
        "budget: max_evaluations reached (4 of 8, 6 kept for the held-out phase)",
    )
    with world.sessions() as session:
        reached = session.scalars(
            select(Event).where(Event.run_id == run_id, Event.kind == "checkpoint_reached").order_by(Event.id)
        ).all()
        assert [(e.payload["fraction"], e.payload["final"]) for e in reached] == [(0.5, True), (1.0, True)]
    assert world.member(run_id, world.seed).heldout_resolved == 1


@pytest.mark.parametrize(("choose", "scored"), [("score", "first"), ("family", "second"), ("tree", "second")])
def test_a_checkpoint_scores_the_agent_the_run_names_by_its_rule(
    any_world: World, api: TestClient, choose: str, scored: str
) -> None:
    world = any_world
    run_id = world.start(
        stages=[{"tasks": T[:2]}],
        budget={"max_children": 3, "max_evaluations": 16},
        evaluation={"heldout": {"tasks": T[2:], "top_k": 1, "choose": choose}, "checkpoints": [0.5]},
    )
    tick_and_answer(world, {(world.seed, T[0])})  # the seed: 1/2
    children: list[str] = []
    for _ in range(2):  # two children in a line, each 2/2 (`best` expands the first)
        world.driver.tick()
        improve, _ = world.outbox.take()
        assert [job.parent_id for job in improve] == [children[-1] if children else world.seed]
        children.append(world.make_child(improve[0]))
        tick_and_answer(world, {(children[-1], T[0]), (children[-1], T[1])})
    first, second = children
    world.driver.tick()  # the second child is admitted, a third step opens
    with world.sessions() as session:
        named = top_agents(session, run_id=run_id, k=1)
    improve, _ = world.outbox.take()
    world.make_child(improve[0])
    # The third child's 2 evaluations bring the spend to 8 of 16: the checkpoint is reached.
    # Both children are 2/2: by the lower bound (ties: the earlier) that is the first, while
    # the family and lineage estimates put the second, whose parent is 2/2 too, ahead.
    sent = tick_and_answer(world, set())
    expected = {"first": first, "second": second}[scored]
    assert named == [expected]  # the checkpoint checks the agent the run named
    assert sorted((job.agent_id, job.task_id) for job in sent if job.task_id in T[2:]) == sorted(
        (expected, task) for task in T[2:]
    )
    checkpoint = api.get(f"/api/runs/{run_id}").json()["checkpoints"][0]
    assert (checkpoint["agent_id"], checkpoint["chosen_by"]) == (expected, choose)
    assert checkpoint["selection_low"] == pytest.approx(wilson(2, 2)[0], abs=1e-4)
    # `clade run watch` says which rule chose it.
    feed = api.get(f"/api/runs/{run_id}/events", params={"limit": 1000}).json()
    line = describe_event(next(e for e in feed if e["kind"] == "checkpoint_reached"))
    rule = {"score": "selection lower bound", "family": "family estimate", "tree": "lineage estimate"}
    assert f"{short(expected)}, the best by {rule[choose]}, to be scored on the held-out tasks" in line


@pytest.mark.parametrize(
    ("evaluation", "budget", "field"),
    [
        ({"checkpoints": [0.5]}, {"max_evaluations": 10}, "evaluation"),
        ({"heldout": {"sample": 2}, "checkpoints": [0.5, 0.5]}, {"max_evaluations": 10}, "evaluation"),
        ({"heldout": {"sample": 2}, "checkpoints": [1.5]}, {"max_evaluations": 10}, "checkpoints"),
    ],
)
def test_checkpoints_without_a_held_out_set_or_out_of_order_are_refused(
    evaluation: dict[str, object], budget: dict[str, object], field: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        RunConfig.model_validate({"seed_agent": "a" * 40, "evaluation": evaluation, "budget": budget})
    assert field in str(caught.value.errors()[0]["loc"])


def test_checkpoints_need_a_budget_to_be_fractions_of() -> None:
    config = RunConfig.model_validate(
        {"seed_agent": "a" * 40, "evaluation": {"heldout": {"sample": 2}, "checkpoints": [0.5]}}
    )
    with pytest.raises(ConfigFieldError) as caught:
        plan_run(config, catalog=BenchmarkCatalog(), visibility_timeout_s=10**6)
    assert caught.value.field == "evaluation.checkpoints"
    assert "budget.max_evaluations or budget.max_usd" in str(caught.value)
