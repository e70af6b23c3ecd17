"""A stateful strategy defined and registered here, in a test module, runs a real run's ticks.

Nothing of Clade's own files knows it: it keeps its own books through the policy hooks
(`service.selection.policy`) and the run's ledger (`service.selection.ledger`), and the
driver, unchanged, calls them. Its books are a ledger of
admitted agents written as run events; it draws each step's parent round-robin from that
ledger, spends one slot on measuring the seed on a task the stages never gave it, and every
improve job it sees carries a line from the ledger.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import ClassVar

import pytest
from sqlalchemy import select

from contracts.events import PolicyRecordEvent
from contracts.jobs import EvaluateJob, ImproveJob
from service import events
from service.db.models import Event, Step
from service.driver.parents import candidates
from service.selection import (
    EXPAND,
    Candidate,
    ImproveParts,
    Measure,
    Move,
    RunScope,
    StrategyBase,
    known_strategies,
    register_strategy,
    unregister_strategy,
)
from service.selection.base import checked
from service.selection.ledger import StepView
from tests.service.driver_world import T, World

LEDGER = "ledger_admitted"
MEASURED = T[3]  # a task of the last stage, which the seed never reaches


def ledger(scope: RunScope) -> list[str]:
    """The admitted agents in the order the strategy wrote them down."""
    return [str(payload["agent_id"]) for payload in scope.ledger.events(LEDGER)]


class LedgerRoundRobin(StrategyBase):
    """Parents in turn from a ledger of admitted agents the strategy keeps as run events."""

    name: ClassVar[str] = "ledger_round_robin"

    def probabilities(self, candidates: Sequence[Candidate]) -> dict[str, float]:
        ordered = checked(candidates)
        return {c.agent_id: 1.0 / len(ordered) for c in ordered}

    def after_admission(self, scope: RunScope) -> None:
        written = set(ledger(scope))
        admitted = [m for m in scope.ledger.members() if m.admitted and m.agent_id not in written]
        for member in sorted(admitted, key=lambda m: (m.step_number or 0, m.agent_id)):
            scope.ledger.record(LEDGER, {"agent_id": member.agent_id, "step": member.step_number})

    def next_move(self, scope: RunScope, number: int, chosen: Sequence[str]) -> Move:
        seed = scope.ledger.seed_agent_id
        if not any(m.agent_id == seed and m.admitted for m in scope.ledger.members()):
            return EXPAND  # nothing to measure yet (and no parent either)
        measured = any(e.task_id == MEASURED for e in scope.ledger.evaluations([seed]))
        return EXPAND if measured else Measure(agent_id=seed, task_ids=(MEASURED,))

    def prepare_draw(self, scope: RunScope, pool: Sequence[Candidate], number: int) -> Sequence[Candidate]:
        turns = ledger(scope)
        turn = turns[(number - 1) % len(turns)]
        return [c for c in pool if c.agent_id == turn]

    def improve_parts(self, scope: RunScope, step: StepView) -> ImproveParts:
        return ImproveParts(experience=f"ledger: {len(ledger(scope))} agents admitted")


@pytest.fixture
def round_robin() -> Iterator[None]:
    register_strategy(LedgerRoundRobin)
    yield
    unregister_strategy(LedgerRoundRobin.name)


def drive(world: World, run_id: str) -> tuple[list[ImproveJob], list[EvaluateJob]]:
    """Tick until the run completes: every child resolves the first task only, the seed too
    (and the measured task); the jobs sent, in order."""
    improves: list[ImproveJob] = []
    evaluations: list[EvaluateJob] = []
    for _ in range(100):
        world.driver.tick()
        improve, evaluate = world.outbox.take()
        for evaluation in evaluate:
            evaluations.append(evaluation)
            world.answer(evaluation, resolved=evaluation.task_id in (T[0], MEASURED))
        for job in improve:
            improves.append(job)
            world.make_child(job)
        if world.run(run_id).status == "completed":
            return improves, evaluations
    raise AssertionError("the run did not complete")


def test_a_strategy_registered_outside_clade_keeps_its_books_through_the_driver(
    any_world: World, round_robin: None
) -> None:
    world = any_world
    assert "ledger_round_robin" in known_strategies()
    run_id = world.start(
        selection={"strategy": "ledger_round_robin"},
        # Stage 1 passes on the first task; stage 2 stops everyone, so no agent reaches stage 3.
        stages=[{"tasks": T[:1], "threshold": 0.5}, {"tasks": T[1:2], "threshold": 1.0}, {"tasks": T[2:]}],
        budget={"max_children": 3},
    )
    improves, evaluations = drive(world, run_id)

    with world.sessions() as session:
        steps = session.scalars(select(Step).where(Step.run_id == run_id).order_by(Step.number)).all()
        children = [step.child_id for step in steps]
        # A kind of the strategy's own is a `policy_record` in the run's feed, named by that kind.
        feed = [events.read(e) for e in session.scalars(select(Event).where(Event.run_id == run_id))]
        books = [
            str(e.payload.data["agent_id"])
            for e in sorted(feed, key=lambda e: e.id)
            if isinstance(e, PolicyRecordEvent) and e.payload.name == LEDGER
        ]
        run = world.run(run_id)
        pool = {c.agent_id: c for c in candidates(session, run)}
    # The ledger names every admitted agent once, in the order they were admitted.
    assert books == [world.seed, *children]
    # Round-robin over the ledger: step 1 from the seed, step n from the agent admitted n-1th.
    assert [step.parent_id for step in steps] == [world.seed, children[0], children[1]]
    # The measuring slot opened no step: 3 steps for 3 children, and the seed was measured on a
    # task no stage gave it, once, before any improve job went out.
    assert [step.number for step in steps] == [1, 2, 3]
    measured = [e for e in evaluations if e.task_id == MEASURED]
    assert [e.agent_id for e in measured] == [world.seed]
    assert evaluations.index(measured[0]) == 2  # after the seed's two stages, before any child's
    # The measurement counts in the seed's clade: its 3 results and each child's 2 (1 + 1 + 3 solved).
    assert (pool[world.seed].clade_resolved, pool[world.seed].clade_attempted) == (5, 9)
    # Every improve job carried what the strategy's books said when it was sent.
    assert [job.experience for job in improves] == [f"ledger: {n} agents admitted" for n in (1, 2, 3)]
    assert (world.run(run_id).stop_reason or "").startswith(
        "budget: max_children reached (3 of 3 steps attempted"
    )


def test_a_strategy_name_is_registered_once() -> None:
    class Impostor(LedgerRoundRobin):
        pass

    register_strategy(LedgerRoundRobin)
    try:
        with pytest.raises(ValueError, match="'ledger_round_robin' is already registered"):
            register_strategy(Impostor)
        register_strategy(LedgerRoundRobin)  # the same class again: nothing happens
    finally:
        unregister_strategy(LedgerRoundRobin.name)
    assert "ledger_round_robin" not in known_strategies()
    with pytest.raises(ValueError, match="'best' is a built-in selection strategy"):
        unregister_strategy("best")


class MeasuresAStranger(LedgerRoundRobin):
    """Asks to measure an agent that is not in the run (a policy's bug)."""

    name: ClassVar[str] = "measures_a_stranger"

    def next_move(self, scope: RunScope, number: int, chosen: Sequence[str]) -> Move:
        return Measure(agent_id="f" * 40, task_ids=(T[0],))


def test_a_policy_asking_to_measure_an_unknown_agent_is_named_in_a_driver_error(world: World) -> None:
    register_strategy(MeasuresAStranger)
    try:
        run_id = world.start(selection={"strategy": "measures_a_stranger"}, stages=[{"tasks": T[:1]}])
        for _ in range(3):  # the seed's evaluation, its admission, then the policy's move
            world.driver.tick()
            for job in world.outbox.take()[1]:
                world.answer(job, resolved=True)
    finally:
        unregister_strategy(MeasuresAStranger.name)
    with world.sessions() as session:
        errors = list(
            session.scalars(select(Event.payload).where(Event.run_id == run_id, Event.kind == "driver_error"))
        )
    assert errors, "the refused move left no trace"
    assert f"the policy asked to measure {'f' * 40}, which is not admitted in run {run_id}" in str(
        errors[0]["error"]
    )
    assert world.run(run_id).status == "running"  # nothing of the tick was kept, the run waits
