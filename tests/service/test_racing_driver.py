"""The racing evaluation policy with the real driver, on SQLite and PostgreSQL: a hopeless child
is stopped after its first batch, a clear pass stops early, and the API says how many tasks each
agent got and why it stopped. Workers are played by the test (see driver_world.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from contracts.events import StageStopped, kind_of
from service.db.models import Evaluation, Event, StageScore
from service.driver.loop import RunDriver
from tests.service.driver_world import World, service_over

# Ten tasks of clade-mini for the screening stage, four for the second.
NAMES = "textkit-1 spanlib-1 ledger-1 calcpy-1 textkit-2 spanlib-2 ledger-2 calcpy-2 textkit-3 spanlib-3"
TASKS = [
    f"clade-mini__{name}" for name in [*NAMES.split(), "ledger-3", "calcpy-3", "confkit-1", "graphlet-1"]
]
SCREEN, SECOND = TASKS[:10], TASKS[10:]
RACING = {
    "stages": [{"tasks": SCREEN, "threshold": 0.4}, {"tasks": SECOND}],
    "selection": {"strategy": "best"},
    "budget": {"max_children": 1},
    "parallelism": 1,
    "evaluation": {"policy": "racing", "racing": {"batch": 5, "confidence": 0.95}},
}


@pytest.fixture
def api(any_world: World, tmp_path: Path) -> Iterator[TestClient]:
    with service_over(tmp_path, any_world.url) as client:
        yield client


def answer(world: World, resolved: bool) -> list[str]:
    """Tick; answer every evaluation sent with `resolved`; the tasks sent (in the order the jobs
    went out, which PostgreSQL need not give in stage order: compare them sorted)."""
    world.driver.tick()
    sent, world.outbox.sent_evaluate = world.outbox.sent_evaluate, []
    for job in sent:
        world.answer(job, resolved=resolved)
    return [job.task_id for job in sent]


def stops(world: World, run_id: str) -> list[StageStopped]:
    with world.sessions() as session:
        rows = session.scalars(
            select(Event)
            .where(Event.run_id == run_id, Event.kind == kind_of(StageStopped))
            .order_by(Event.id)
        ).all()
        return [StageStopped.model_validate(row.payload) for row in rows]


def evaluations_of(world: World, run_id: str, agent_id: str) -> int:
    with world.sessions() as session:
        return (
            session.scalar(
                select(func.count()).where(Evaluation.run_id == run_id, Evaluation.agent_id == agent_id)
            )
            or 0
        )


def test_racing_stops_a_clear_pass_early_and_a_hopeless_child_after_one_batch(
    any_world: World, api: TestClient
) -> None:
    world = any_world
    run_id = world.start(**RACING)
    # The seed's first batch: five of the ten screening tasks, all resolved.
    assert sorted(answer(world, resolved=True)) == sorted(SCREEN[:5])
    # 5/5: the lower bound 0.649 clears 0.4, so the screening stage ends after 5 of 10 tasks
    # and the second stage (4 tasks, one batch) is sent at once.
    assert sorted(answer(world, resolved=False)) == sorted(SECOND)
    world.driver.tick()
    seed = world.member(run_id, world.seed)
    assert (seed.status, seed.attempted, seed.resolved, seed.race_stop) == (
        "admitted",
        9,
        5,
        "stage_complete",
    )

    improve, _ = world.outbox.take()
    child = world.make_child(improve[0])
    # The child's first batch: nothing resolved. A restarted driver decides from the rows alone.
    assert sorted(answer(world, resolved=False)) == sorted(SCREEN[:5])
    world.driver = RunDriver(sessions=world.sessions, dispatcher=world.outbox, interval_s=0.1)
    world.driver.tick()
    rejected = world.member(run_id, child)
    assert (rejected.status, rejected.attempted, rejected.race_stop) == (
        "rejected",
        5,
        "cannot_reach_threshold",
    )
    assert rejected.reason == (
        "stage 1: cannot_reach_threshold after 5 of 10 tasks "
        "(0/5 resolved; upper bound 0.351 < threshold 0.4)"
    )
    for _ in range(3):  # more ticks send nothing more and record nothing twice
        world.driver.tick()
    assert world.outbox.sent_evaluate == [] and evaluations_of(world, run_id, child) == 5
    assert world.run(run_id).status == "completed"

    recorded = [
        (s.agent_id, s.stage, s.reason, s.passed, s.tasks, s.stage_tasks) for s in stops(world, run_id)
    ]
    assert recorded == [
        (world.seed, 0, "clearly_passes", True, 5, 10),
        (world.seed, 1, "stage_complete", True, 4, 4),
        (child, 0, "cannot_reach_threshold", False, 5, 10),
    ]
    with world.sessions() as session:
        scores = session.scalars(
            select(StageScore).where(StageScore.run_id == run_id, StageScore.agent_id == child)
        )
        assert [(s.stage, s.resolved, s.total, s.passed, s.stop) for s in scores] == [
            (0, 0, 5, False, "cannot_reach_threshold")
        ]

    # The API: tasks evaluated and the stop, per agent of the run, in its lineage and details.
    agents = {a["id"]: a for a in api.get(f"/api/runs/{run_id}/agents").json()["items"]}
    assert (agents[child]["attempted"], agents[child]["race_stop"]) == (5, "cannot_reach_threshold")
    assert (agents[world.seed]["attempted"], agents[world.seed]["race_stop"]) == (9, "stage_complete")
    nodes = {n["id"]: n for n in api.get(f"/api/runs/{run_id}/lineage").json()["nodes"]}
    assert (nodes[child]["attempted"], nodes[child]["race_stop"]) == (5, "cannot_reach_threshold")
    detail = api.get(f"/api/agents/{child}").json()["runs"][0]
    assert detail["race_stop"] == "cannot_reach_threshold"
    assert [(s["stage"], s["total"], s["stop"]) for s in detail["stages"]] == [
        (0, 5, "cannot_reach_threshold")
    ]
    kinds = [e["kind"] for e in api.get(f"/api/runs/{run_id}/events", params={"limit": 1000}).json()]
    assert kinds.count("stage_stopped") == 3


def test_a_child_that_cannot_beat_its_parent_stops(any_world: World) -> None:
    world = any_world
    run_id = world.start(**RACING | {"stages": [{"tasks": SCREEN}]})  # no threshold: only the parent rule
    answer(
        world, resolved=True
    )  # the seed: 5/5, then 10/10 (a stage without threshold is never passed early)
    answer(world, resolved=True)
    world.driver.tick()
    assert world.member(run_id, world.seed).attempted == 10
    improve, _ = world.outbox.take()
    child = world.make_child(improve[0])
    answer(world, resolved=False)
    world.driver.tick()
    member = world.member(run_id, child)
    # A failed first stage rejects, as with the fixed stages: 0/5's upper bound 0.351 is below the
    # parent's 10/10 lower bound 0.787.
    assert (member.status, member.attempted, member.race_stop) == ("rejected", 5, "cannot_beat_parent")


def test_fixed_stages_record_no_stop(any_world: World) -> None:
    world = any_world
    run_id = world.start(**RACING | {"evaluation": {"policy": "stages"}})
    assert sorted(answer(world, resolved=True)) == sorted(SCREEN)
    assert world.member(run_id, world.seed).race_stop is None and stops(world, run_id) == []
