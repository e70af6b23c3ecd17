"""`hgm-paper` through the real run driver, on SQLite and PostgreSQL: HGM's loop in a run's rows.

The seed is scored on the run's stage; every child enters the archive unmeasured and is then
measured one task at a time on the agent a Thompson draw picks; parents are agents with a pass
of their own; the run stops at its evaluation budget (800 when it names none).
"""

from __future__ import annotations

from sqlalchemy import select

from contracts.jobs import EvaluateJob, ImproveJob
from service.db.models import Evaluation, Event, Run, RunAgent, Step
from service.plan import stored_plan
from tests.service.driver_world import T, World

STAGES = [{"tasks": T}]


def solves(job: EvaluateJob, seed: str) -> bool:
    """The seed solves the first two tasks, each child the first one and the last one."""
    return job.task_id in (T[:2] if job.agent_id == seed else (T[0], T[3]))


def drive(world: World, run_id: str, ticks: int = 200) -> tuple[list[ImproveJob], list[EvaluateJob]]:
    """Tick until the run completes, answering every job at once; the jobs, in the order sent."""
    improves: list[ImproveJob] = []
    evaluations: list[EvaluateJob] = []
    for _ in range(ticks):
        world.driver.tick()
        improve, evaluate = world.outbox.take()
        for job in evaluate:
            evaluations.append(job)
            world.answer(job, resolved=solves(job, world.seed))
        for job in improve:
            improves.append(job)
            world.make_child(job)
        if world.run(run_id).status == "completed":
            return improves, evaluations
    raise AssertionError("the run did not complete")


def test_hgm_paper_runs_hgms_loop_through_the_driver(any_world: World) -> None:
    world = any_world
    run_id = world.start(
        selection={"strategy": "hgm-paper"}, stages=STAGES, budget={"max_evaluations": 16}, parallelism=1
    )
    improves, evaluations = drive(world, run_id)

    with world.sessions() as session:
        steps = session.scalars(select(Step).where(Step.run_id == run_id).order_by(Step.number)).all()
        members = {m.agent_id: m for m in session.scalars(select(RunAgent).where(RunAgent.run_id == run_id))}
        rows = session.scalars(select(Evaluation).where(Evaluation.run_id == run_id)).all()
        verdicts = select(Event).where(Event.run_id == run_id, Event.kind == "agent_admitted")
        admitted = {e.payload["agent_id"]: e.payload["score"] for e in session.scalars(verdicts)}
    children = [step.child_id for step in steps]
    assert all(step.status == "admitted" for step in steps)
    # The seed walked the stage: its four tasks first, before any child was made.
    assert [job.agent_id for job in evaluations[:4]] == [world.seed] * 4
    assert {job.task_id for job in evaluations[:4]} == set(T)
    # Every later evaluation is a measurement of a child: one task it had not been given.
    later = evaluations[4:]
    assert later and all(job.agent_id in children for job in later)
    pairs = [(job.agent_id, job.task_id) for job in later]
    assert len(pairs) == len(set(pairs))
    # A child is admitted as soon as it is made, unmeasured (no score yet), and measured later.
    assert {child: admitted[child] for child in children} == dict.fromkeys(children)
    assert admitted[world.seed] == 0.5
    assert len(rows) == 16
    assert world.run(run_id).stop_reason == "budget: max_evaluations reached (16 of 16)"
    # HGM's schedule with one worker: expand while n ** 0.6 >= children, n = the children's
    # evaluations; the first child before any. After 12: floor(12 ** 0.6) + 1 = 5 children.
    assert len(children) == 5
    # Parents are agents with a pass of their own: the seed, or a child once measured with one.
    for job in improves:
        assert any(row.agent_id == job.parent_id and row.resolved for row in rows)
    # Each child's score is over the measurements it got (a child never measured has none).
    for child in children:
        own = [row for row in rows if row.agent_id == child]
        member = members[child]
        assert member.attempted == len(own)
        if own:
            assert member.score == sum(1 for row in own if row.resolved) / len(own)
        else:
            assert member.score is None
    assert members[world.seed].score == 0.5


def test_a_run_naming_hgm_paper_gets_hgms_budget_at_plan_time(world: World) -> None:
    run_id = world.start(selection={"strategy": "hgm-paper"}, stages=STAGES, budget={})
    with world.sessions() as session:
        run = session.get(Run, run_id)
        assert run is not None
        assert run.config["budget"]["max_evaluations"] == 800
        assert run.config["budget"]["max_children"] == 800
        assert stored_plan(run).budget.max_evaluations == 800
    # What a run gives is kept; the other fields are still filled in.
    given = world.start(selection={"strategy": "hgm-paper"}, stages=STAGES, budget={"max_children": 7})
    assert world.run(given).config["budget"] == world.run(run_id).config["budget"] | {"max_children": 7}
    # Another strategy gets no evaluation budget it did not ask for.
    other = world.start(selection={"strategy": "hgm"}, stages=STAGES, budget={})
    assert world.run(other).config["budget"]["max_evaluations"] is None


def test_the_same_run_replayed_decides_the_same_moves(any_world: World) -> None:
    """Two runs with the same seed and the same answers measure the same tasks on the same
    steps' children: every decision comes from the rows and the run's rng_seed."""
    first = any_world
    run_a = first.start(
        selection={"strategy": "hgm-paper"}, stages=STAGES, budget={"max_evaluations": 14}, parallelism=2
    )
    run_b = first.start(
        selection={"strategy": "hgm-paper"}, stages=STAGES, budget={"max_evaluations": 14}, parallelism=2
    )

    def moves(run_id: str) -> list[tuple[int, str]]:
        with first.sessions() as session:
            made = session.scalars(select(Step).where(Step.run_id == run_id))
            number = {step.child_id: step.number for step in made}
            number[first.seed] = 0
            rows = session.scalars(
                select(Evaluation)
                .where(Evaluation.run_id == run_id, Evaluation.reused_from.is_(None))
                .order_by(Evaluation.created_at, Evaluation.id)
            ).all()
            return sorted((number[row.agent_id], row.task_id) for row in rows)

    drive(first, run_a)
    drive(first, run_b)
    assert moves(run_a) == moves(run_b)
