"""Islands, MAP-Elites niches and group evolution through the real run driver.

Workers are played by the test (tests/service/driver_world.py): each evaluation resolves
the tasks the test gives the agent's step, each improve job gets a child.
"""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from contracts.jobs import ImproveJob
from service.db.models import Event, Run, Step
from service.driver.parents import candidates, choose_parent
from service.plan import stored_plan
from service.results import reject_step
from service.selection import MapElites
from tests.service.driver_world import T, World, service_over
from tests.service.helpers import make_patch

# A step's child resolves these tasks (None: the seed); a step missing here fails without a child.
Solves = dict[int | None, set[str]]


def drive(
    world: World, run_id: str, solves: Solves, diagnosis: Callable[[int], str] | None = None
) -> list[ImproveJob]:
    """Tick until the run completes, answering every job; the improve jobs sent, in order."""
    sent: list[ImproveJob] = []
    for _ in range(100):
        world.driver.tick()
        improve, evaluate = world.outbox.take()
        for job in evaluate:
            step = world.member(run_id, job.agent_id).step_number or None  # the seed's is 0
            world.answer(job, resolved=job.task_id in solves[step])
        for job in improve:
            sent.append(job)
            number = step_number(world, job.step_id)
            text = diagnosis(number) if diagnosis else None
            if number in solves:
                world.version += 1
                old = (world.archive.git.read_file(job.parent_id, "x.txt") or b"").decode()
                patch = make_patch(old, f"{world.version}\n", path="x.txt")
                world.archive.create_child(step_id=job.step_id, patch=patch, diagnosis=text)
            else:
                with world.sessions.begin() as session:
                    reject_step(session, step_id=job.step_id, reason="the improver crashed", diagnosis=text)
        if world.run(run_id).status == "completed":
            return sent
    raise AssertionError("the run did not complete")


def step_number(world: World, step_id: str) -> int:
    with world.sessions() as session:
        step = session.get(Step, step_id)
        assert step is not None
        return step.number


def children_by_step(world: World, run_id: str) -> dict[int, str]:
    with world.sessions() as session:
        steps = session.scalars(select(Step).where(Step.run_id == run_id, Step.child_id.is_not(None)))
        return {s.number: s.child_id for s in steps if s.child_id}


def events(world: World, run_id: str, kind: str) -> list[dict[str, object]]:
    with world.sessions() as session:
        rows = session.scalars(
            select(Event).where(Event.run_id == run_id, Event.kind == kind).order_by(Event.id)
        )
        return [row.payload for row in rows]


@pytest.fixture
def api(world: World, tmp_path: Path) -> Iterator[TestClient]:
    with service_over(tmp_path) as client:  # the world's database and archive
        yield client


def test_islands_place_children_and_migrate_the_best(world: World, api: TestClient) -> None:
    run_id = world.start(
        selection={"strategy": "islands", "params": {"islands": 2, "migration_interval": 2}},
        stages=[{"tasks": T[:2]}],
        budget={"max_children": 4},
    )
    # The seed and most children resolve 1 of 2; step 1's child resolves both.
    sent = drive(world, run_id, {None: {T[0]}, 1: set(T[:2]), 2: {T[0]}, 3: {T[0]}, 4: {T[0]}})
    child = children_by_step(world, run_id)
    assert world.member(run_id, world.seed).island is None  # on every island
    assert {n: world.member(run_id, child[n]).island for n in child} == {1: 1, 2: 0, 3: 1, 4: 0}
    # Before step 2's draw island 1's best (step 1's child) moved to island 0; island 0's best,
    # the seed, is everywhere already. At step 4 every best is where it would go.
    assert events(world, run_id, "island_migration") == [
        {"agent_id": child[1], "from": 1, "to": 0, "step": 2}
    ]
    present = {1: {world.seed, child[1]}, 2: {world.seed, child[1]}, 3: {world.seed, child[1]}}
    present[4] = {world.seed, child[1], child[2]}
    assert sent[0].parent_id == world.seed
    for number, job in enumerate(sent, start=1):
        assert job.parent_id in present[number], number
    nodes = {n["id"]: n for n in api.get(f"/api/runs/{run_id}/lineage").json()["nodes"]}
    assert nodes[child[3]]["island"] == 1 and nodes[world.seed]["island"] is None
    # The draw is a function of the archive and the step number: the same twice.
    with world.sessions() as session:
        run = session.get(Run, run_id)
        assert run is not None
        first = choose_parent(session, run, stored_plan(run), 5)
        assert first == choose_parent(session, run, stored_plan(run), 5)


def test_map_elites_records_niches_and_draws_only_elites(world: World, api: TestClient) -> None:
    run_id = world.start(
        selection={"strategy": "map_elites", "params": {"bins": 2, "levels": 2}},
        stages=[{"tasks": T}],
        budget={"max_children": 3},
    )
    # Clusters by task id: (calcpy, ledger) and (spanlib, textkit).
    calc, ledger, span, text = sorted(T)
    solves: Solves = {None: {calc, ledger}, 1: {span, text}, 2: {calc, ledger}, 3: set(T)}
    sent = drive(world, run_id, solves)
    child = children_by_step(world, run_id)
    niches = {n: world.member(run_id, child[n]).niche for n in child}
    assert world.member(run_id, world.seed).niche == "1-0"
    assert niches == {1: "0-1", 2: "1-0", 3: "1-1"}
    # Step 2's child shares the seed's niche and score with fewer children: it is that
    # niche's elite, and the seed is never drawn again once it is.
    assert sent[2].parent_id in {child[1], child[2]}
    with world.sessions() as session:
        run = session.get(Run, run_id)
        assert run is not None
        strategy = stored_plan(run).strategy
        assert isinstance(strategy, MapElites)
        elites = {niche: c.agent_id for niche, c in strategy.elites(candidates(session, run)).items()}
    assert elites == {"1-0": child[2], "0-1": child[1], "1-1": child[3]}
    nodes = {n["id"]: n for n in api.get(f"/api/runs/{run_id}/lineage").json()["nodes"]}
    assert nodes[child[3]]["niche"] == "1-1"


def test_a_group_shares_its_experience_pool(world: World, api: TestClient) -> None:
    run_id = world.start(
        selection={"strategy": "group", "params": {"group_size": 2}},
        stages=[{"tasks": T[:2]}],
        budget={"max_children": 4},
        parallelism=2,
    )
    titles = {
        1: "Run the tests before finishing",
        2: "Retry failed commands",
        3: "Shorter prompts",
        4: "More steps",
    }
    # Step 1's child resolves both tasks (+0.50 on the seed); step 2 fails without a child.
    solves: Solves = {None: {T[0]}, 1: set(T[:2]), 3: set(), 4: {T[0]}}
    sent = drive(world, run_id, solves, diagnosis=lambda n: f"## {titles[n]}\n\nDetails of the change.")
    with world.sessions() as session:
        groups = {s.number: s.group_id for s in session.scalars(select(Step).where(Step.run_id == run_id))}
    assert groups == {1: "1", 2: "1", 3: "2", 4: "2"}
    child = children_by_step(world, run_id)
    assert world.member(run_id, child[1]).group_id == "1" and world.member(run_id, child[3]).group_id == "2"
    # Group 1: the seed is the only candidate. Group 2: two parents without replacement.
    assert [j.parent_id for j in sent[:2]] == [world.seed, world.seed]
    assert {j.parent_id for j in sent[2:]} == {world.seed, child[1]}
    # Group 1 had no experience yet. Step 2 failed at once (version 1); group 2 started once
    # step 1's child was scored, and its jobs carry version 2, from both of group 1's steps.
    assert [j.experience for j in sent[:2]] == [None, None]
    pool = sent[2].experience
    assert pool is not None and sent[3].experience == pool
    assert "version 2, 2 finished attempts" in pool
    assert (
        f"step 1 (group 1): parent {world.seed[:12]} (score 0.50) -> child {child[1][:12]} admitted" in pool
    )
    assert "score 1.00 (+0.50). Tried: Run the tests before finishing. Changed: x.txt" in pool
    assert (
        "step 2 (group 1)" in pool and "no child (the improver crashed). Tried: Retry failed commands" in pool
    )
    assert (
        pool.index("Changes that helped:")
        < pool.index("step 1")
        < pool.index("did not help")
        < pool.index("step 2")
    )

    latest = api.get(f"/api/runs/{run_id}/experience").json()
    assert latest["version"] >= 2 and latest["finished_steps"] == 4
    (step3,) = [e for e in latest["entries"] if e["step"] == 3]
    assert step3["child_score"] == 0.0 and step3["change"] < 0  # step 3's child resolved nothing
    assert f"score 0.00 ({step3['change']:+.2f}). Tried: Shorter prompts" in latest["text"]
    first = api.get(f"/api/runs/{run_id}/experience", params={"version": 1}).json()
    assert (first["finished_steps"], [e["step"] for e in first["entries"]]) == (1, [2])
    second = api.get(f"/api/runs/{run_id}/experience", params={"version": 2}).json()
    assert second["text"] == pool and [e["step"] for e in second["entries"]] == [1, 2]
    missing = api.get(f"/api/runs/{run_id}/experience", params={"version": 99})
    assert missing.status_code == 404
    assert f"has {latest['version']} versions, not 99" in missing.json()["detail"]
    export = api.get(f"/api/runs/{run_id}/export")
    assert export.status_code == 200
    with tarfile.open(fileobj=io.BytesIO(export.content), mode="r:gz") as tar:
        (name,) = [n for n in tar.getnames() if n.endswith("experience.json")]
        member = tar.extractfile(name)
        assert member is not None
        history = json.loads(member.read())
    assert [v["version"] for v in history["versions"]] == list(range(1, latest["version"] + 1))
    assert history["versions"][1]["text"] == pool


def test_runs_without_groups_have_no_experience(world: World, api: TestClient) -> None:
    run_id = world.start(stages=[{"tasks": T[:1]}], budget={"max_children": 1})
    sent = drive(world, run_id, {None: {T[0]}, 1: {T[0]}})
    assert [j.experience for j in sent] == [None]
    answer = api.get(f"/api/runs/{run_id}/experience")
    assert answer.status_code == 404 and "no experience pool" in answer.json()["detail"]
    with tarfile.open(fileobj=io.BytesIO(api.get(f"/api/runs/{run_id}/export").content), mode="r:gz") as tar:
        assert not [n for n in tar.getnames() if "experience" in n]
