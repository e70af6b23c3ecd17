"""`hgm` with `above_seed`: parents only among agents the lineage puts at or above the seed."""

from __future__ import annotations

import random

import pytest
from pydantic import ValidationError

from service.selection import Candidate, Hgm, StepContext, make_strategy
from tests.selection.test_hgm_paper import POOL, SEED, Books, Plan, scope, seeded


def candidate(agent_id: str, resolved: int, attempted: int) -> Candidate:
    return Candidate(
        agent_id=agent_id,
        score=resolved / attempted if attempted else 0.0,
        children=0,
        clade_resolved=resolved,
        clade_attempted=attempted,
    )


def run_with_two_children() -> tuple[Books, list[Candidate]]:
    """The seed at 15/30; one child failing its 3 tasks, one passing them, one grandchild under
    the failing child that passes its own 3 (its lineage still holds it below the seed)."""
    books = seeded(solved=15)
    results = {"worse": [False] * 3, "better": [True] * 3, "after-worse": [True, False, False]}
    parents = {"worse": SEED, "better": SEED, "after-worse": "worse"}
    for number, (agent, outcome) in enumerate(results.items(), start=1):
        books.add_member(agent, parents[agent], number)
        for task, resolved in zip(POOL[:3], outcome, strict=True):
            books.add_result(agent, task, resolved)
    pool = [
        candidate(SEED, 15, 30),
        candidate("worse", 0, 3),
        candidate("better", 3, 3),
        candidate("after-worse", 1, 3),
    ]
    return books, pool


def test_only_agents_at_or_above_the_seed_are_drawn() -> None:
    books, pool = run_with_two_children()
    strategy = make_strategy("hgm", {"above_seed": 1.0})
    kept = {c.agent_id for c in strategy.prepare_draw(scope(books, Plan()), pool, 4)}
    assert kept == {SEED, "better"}
    # Every draw from what is kept names one of them.
    drawn = {
        strategy.select_for_step(
            list(strategy.prepare_draw(scope(books, Plan()), pool, 4)), rng, StepContext(number=4)
        )
        for rng in (random.Random(i) for i in range(50))
    }
    assert drawn <= {SEED, "better"} and SEED in drawn and "better" in drawn


def test_without_it_every_candidate_stays_in_the_draw() -> None:
    books, pool = run_with_two_children()
    assert list(Hgm().prepare_draw(scope(books, Plan()), pool, 4)) == pool


def test_a_seed_with_no_result_yet_leaves_the_pool_as_it_is() -> None:
    books = Books()
    books.add_member(SEED, None, 0)
    pool = [candidate(SEED, 0, 0)]
    assert list(make_strategy("hgm", {"above_seed": 1.0}).prepare_draw(scope(books, Plan()), pool, 1)) == pool


def test_the_param_is_a_switch() -> None:
    assert make_strategy("hgm", {"above_seed": 0.0}) == Hgm()
    with pytest.raises(ValidationError, match="above_seed"):
        make_strategy("hgm", {"above_seed": 0.5})
