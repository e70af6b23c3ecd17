"""Cost with the real driver, on SQLite and PostgreSQL: a dollar budget that pays for its held-out
scoring, and the expected cost per agent and task that the policies read from the run's ledger.

Workers are played by the test (see driver_world.py): each evaluation reports what it spent.
"""

from __future__ import annotations

import pytest
from sqlalchemy import select

from service.db.models import Evaluation, Event, LLMUsage, Run
from service.driver.ledger import DatabaseLedger
from service.driver.parents import candidates
from service.plan import stored_plan
from service.queries import top_agents, usage_totals
from service.selection.policy import RunScope
from tests.service.driver_world import T, World


def run_kinds(world: World, run_id: str) -> list[str]:
    with world.sessions() as session:
        return list(session.scalars(select(Event.kind).where(Event.run_id == run_id).order_by(Event.id)))


def drive_to_the_end(world: World, run_id: str, usd_of: dict[str, float] | None = None) -> None:
    """Tick, answer each evaluation (resolved; costing `usd_of[agent]`, default $0.10) and make
    each child asked for, until the run is over (bounded: every wait has an end)."""
    for _ in range(60):
        world.driver.tick()
        if world.run(run_id).status == "completed":
            return
        improve, evaluate = world.outbox.take()
        for job in evaluate:
            world.answer(job, resolved=True, usd=(usd_of or {}).get(job.agent_id, 0.10))
        for job in improve:
            world.make_child(job)
    raise AssertionError(f"run {run_id} did not complete in 60 ticks")


def test_a_dollar_budget_stops_the_steps_in_time_to_pay_for_the_held_out_scoring(any_world: World) -> None:
    world = any_world
    run_id = world.start(
        stages=[{"tasks": T[:2]}],
        budget={"max_children": 10, "max_usd": 2.0, "per_evaluation_usd": 0.10},
        evaluation={"heldout": {"tasks": T[2:], "top_k": 1}, "checkpoints": [0.5, 1.0]},
    )
    drive_to_the_end(world, run_id)
    run = world.run(run_id)
    with world.sessions() as session:
        usd, _ = usage_totals(session, LLMUsage.run_id == run_id)
        rows = session.scalars(select(Evaluation).where(Evaluation.run_id == run_id)).all()
    # Kept back at first: 3 held-out scorings (2 checkpoints, the held-out phase) of 2 tasks at
    # $0.10, and what the step in flight may spend on its child's first stage: $0.80 of $2.
    assert usd <= 2.0
    assert run.stop_reason is not None and run.stop_reason.startswith("budget: max_usd reached")
    heldout = [e for e in rows if e.purpose == "heldout"]
    assert heldout and all(e.status == "done" for e in heldout)
    agents = {e.agent_id for e in rows}
    assert 1 < len(agents) < 11  # children were made, and the steps stopped before max_children
    assert run_kinds(world, run_id).count("checkpoint_scored") == 2
    with world.sessions() as session:
        pick = top_agents(session, run_id=run_id, k=1)[0]
    assert world.member(run_id, pick).heldout_total == 2  # the pick is a measured one


def test_the_ledger_knows_what_each_agent_costs_per_task_and_cost_weight_prefers_the_cheaper(
    any_world: World,
) -> None:
    world = any_world
    run_id = world.start(
        stages=[{"tasks": T[:2]}],
        selection={"strategy": "score_child_prop", "params": {"cost_weight": 1.0}},
        budget={"max_children": 1},
    )
    world.driver.tick()
    _, evaluate = world.outbox.take()
    for job in evaluate:
        world.answer(job, resolved=True, usd=0.30)  # the seed: $0.30 a task
    world.driver.tick()
    improve, _ = world.outbox.take()
    child = world.make_child(improve[0])
    world.driver.tick()
    _, evaluate = world.outbox.take()
    for job in evaluate:
        world.answer(job, resolved=True, usd=0.10)  # its child: the same score at a third of the cost
    world.driver.tick()
    with world.sessions() as session:
        run = session.get(Run, run_id)
        assert run is not None
        plan = stored_plan(run)
        ledger = DatabaseLedger(session, run)
        costs = ledger.costs()
        seed_cost, child_cost = (costs.per_task(a, T[0]) for a in (world.seed, child))
        assert seed_cost is not None and child_cost is not None
        assert (seed_cost.usd, child_cost.usd) == (0.30, 0.10)
        assert (seed_cost.tokens, seed_cost.seconds >= 0) == (15, True)  # the usage each answer reported
        pool = candidates(session, run)
        scope = RunScope(ledger=ledger, plan=plan, steps_opened=1)
        drawn = plan.strategy.prepare_draw(scope, pool, 2)
        expected = {c.agent_id: c.expected_cost for c in drawn}
        assert expected[child] is not None and round(expected[child].usd, 6) == 0.2  # 2 tasks at $0.10
        chances = plan.strategy.probabilities(drawn)
    # Same score, the seed has one child already (DGM's 1 / (1 + children)) and costs 3 times more.
    assert chances[child] / chances[world.seed] == pytest.approx(2 * 3)
