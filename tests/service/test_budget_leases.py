"""Budgets that hold under parallelism: each job runs on a lease of the run's money and tokens.

The goal tests run the real driver with real gateways (`budget_sim`): four jobs and more at
once, calls dear enough to cross the budget mid-flight. Before leases every gateway enforced
the run's whole remainder, and such a run spent about 2.5 times its `max_usd`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from contracts.config import MAX_RUN_COUNT
from contracts.jobs import Budget
from service import leases
from service.db.models import Evaluation, Lease
from service.driver.budget import MAX_LEASE_TOKENS
from service.driver.jobs import MAX_DISPATCHES
from tests.service.budget_sim import simulate
from tests.service.driver_world import T, World


@pytest.mark.parametrize(
    ("limits", "calls_per_job"),
    [({"max_usd": 1.0}, 12), ({"max_usd": 3.0}, 6), ({"max_tokens": 5000}, 12)],
    ids=["usd-first-stage", "usd-through-children", "tokens"],
)
def test_spend_stays_within_the_budget_plus_one_call_at_parallelism_4(
    tmp_path: Path, limits: dict[str, float], calls_per_job: int
) -> None:
    outcome = simulate(tmp_path, parallelism=4, calls_per_job=calls_per_job, **limits)  # type: ignore[arg-type]
    assert outcome.jobs >= 4 and outcome.worst_call_usd > 0.05  # dear calls, four at once at least
    if outcome.max_usd is not None:
        assert outcome.spent_usd <= outcome.max_usd + outcome.worst_call_usd
        assert outcome.spent_usd >= 0.8 * outcome.max_usd  # and the budget was used, not hoarded
    if outcome.max_tokens is not None:
        assert outcome.spent_tokens <= outcome.max_tokens + outcome.worst_call_tokens
        assert outcome.spent_tokens >= 0.8 * outcome.max_tokens
    kind = "max_usd" if outcome.max_usd is not None else "max_tokens"
    assert outcome.stop_reason is not None and outcome.stop_reason.startswith(f"budget: {kind}")


def _leases(world: World) -> list[Lease]:
    with world.sessions() as session:
        return list(session.scalars(select(Lease).order_by(Lease.created_at, Lease.id)))


def test_jobs_in_flight_share_the_room_and_a_settled_lease_gives_back_what_is_unspent(world: World) -> None:
    world.start(stages=[{"tasks": T}], budget={"max_children": 1, "max_usd": 1.0}, parallelism=4)
    world.driver.tick()
    _, evaluate = world.outbox.take()
    assert [job.budget for job in evaluate] == [Budget(run_remaining_usd=0.25)] * 4
    assert [(lease.usd_reserved, lease.outcome) for lease in _leases(world)] == [(0.25, None)] * 4

    world.answer(evaluate[0], resolved=True, usd=0.1)
    leases = {lease.evaluation_id: lease for lease in _leases(world)}
    settled = leases[evaluate[0].evaluation_id]
    assert (settled.outcome, settled.usd_spent, settled.tokens_spent) == ("settled", 0.1, 15)
    assert settled.settled_at is not None
    for job in evaluate[1:]:
        world.answer(job, resolved=False, usd=0.05)
    world.driver.tick()  # the seed is admitted (1/4); its one step goes out
    improve, _ = world.outbox.take()
    # Its lease: a parallelism's share of the room, $1 less the $0.25 spent; nothing else is held.
    assert len(improve) == 1 and improve[0].budget.run_remaining_usd == pytest.approx(0.75 / 4)


def test_no_job_starts_without_room_and_the_run_ends_once_nothing_is_in_flight(world: World) -> None:
    run_id = world.start(stages=[{"tasks": T}], budget={"max_children": 1, "max_usd": 1.0}, parallelism=2)
    world.driver.tick()
    _, evaluate = world.outbox.take()
    # Four evaluations want to go: each is leased a quarter, whatever the parallelism.
    assert len(evaluate) == 4
    world.answer(evaluate[0], resolved=True, usd=0.999)  # a job that spent nearly everything
    world.driver.tick()
    assert world.outbox.take() == ([], [])  # three leases are still out: the run waits for them
    assert world.run(run_id).status == "running"
    for job in evaluate[1:]:
        world.answer(job, resolved=False, usd=0.0)
    world.driver.tick()  # the seed is admitted; its step finds $0.001, under 1% of the budget
    assert world.outbox.take() == ([], [])
    run = world.run(run_id)
    assert run.status == "completed"
    assert run.stop_reason == (
        "budget: max_usd spent or reserved ($0.9990 of $1.0000 spent; no room for another job)"
    )


def test_a_lost_jobs_lease_expires_when_it_is_sent_again_and_when_it_is_given_up(world: World) -> None:
    world.start(stages=[{"tasks": T[:1]}], budget={"max_children": 1, "max_tokens": 1000})
    for _ in range(MAX_DISPATCHES):
        world.driver.tick()
        _, sent = world.outbox.take()
        assert [job.budget.run_remaining_tokens for job in sent] == [1000]  # the lost lease came back
        world.lose_jobs(Evaluation)
    world.driver.tick()  # given up
    assert [lease.outcome for lease in _leases(world)] == ["expired"] * MAX_DISPATCHES


def test_a_run_that_ends_holds_nothing_in_reserve(world: World) -> None:
    run_id = world.start(stages=[{"tasks": T}], budget={"max_children": 1, "max_usd": 1.0}, parallelism=4)
    world.driver.tick()
    _, evaluate = world.outbox.take()
    world.answer(evaluate[0], resolved=True, usd=1.5)  # one job crossed (its lease did not stop it)
    world.driver.tick()
    assert world.run(run_id).status == "completed"
    assert sorted(str(lease.outcome) for lease in _leases(world)) == ["expired"] * 3 + ["settled"]


def test_the_runs_reply_limit_goes_out_on_every_job(world: World) -> None:
    world.start(stages=[{"tasks": T}], budget={"max_children": 1, "max_reply_tokens": 300}, parallelism=2)
    world.driver.tick()
    _, evaluate = world.outbox.take()
    assert evaluate and all(job.budget.reply_tokens == 300 for job in evaluate)
    for job in evaluate:
        world.answer(job, resolved=True)
    world.driver.tick()
    improve, _ = world.outbox.take()
    assert len(improve) == 1 and improve[0].budget.reply_tokens == 300


def test_a_token_budget_at_its_bound_leases_what_a_job_can_report(any_world: World) -> None:
    # Shares of 10**15 tokens do not fit the 32-bit `tokens_reserved` column of PostgreSQL: each
    # lease is capped at what one job can report, and the run goes on.
    world = any_world
    run_id = world.start(
        stages=[{"tasks": T}], budget={"max_children": 1, "max_tokens": MAX_RUN_COUNT}, parallelism=2
    )
    world.driver.tick()
    _, evaluate = world.outbox.take()
    assert len(evaluate) == 4
    assert {job.budget.run_remaining_tokens for job in evaluate} == {MAX_LEASE_TOKENS}
    assert {lease.tokens_reserved for lease in _leases(world)} == {MAX_LEASE_TOKENS}
    with world.sessions() as session:
        assert leases.outstanding(session, run_id=run_id).tokens == 4 * MAX_LEASE_TOKENS
