"""The lineage estimate (contracts.lineage): a posterior over a run's whole tree of agents."""

from __future__ import annotations

import math

import pytest

from contracts.family import Scored
from contracts.lineage import MIN_STEP_VARIANCE, lineage_estimates, step_variance

FAMILY = [
    Scored("seed", None, 4, 10),
    Scored("a", "seed", 9, 10),
    Scored("b", "seed", 3, 10),
    Scored("c", "a", 5, 10),
    Scored("d", "b", 4, 10),
]


def test_when_edits_change_nothing_every_agent_gets_the_runs_pooled_rate() -> None:
    estimates = lineage_estimates(FAMILY, tau2=1e-12)
    pooled = 25 / 50
    assert all(e.mean == pytest.approx(pooled, abs=1e-6) for e in estimates.values())
    # Fifty tasks' worth of evidence for each, not ten.
    assert all(e.variance == pytest.approx(0.25 / 50, rel=1e-4) for e in estimates.values())


def test_when_edits_change_everything_every_agent_keeps_its_own_rate() -> None:
    estimates = lineage_estimates(FAMILY, tau2=1e12)
    assert {k: round(e.mean, 6) for k, e in estimates.items()} == {
        "seed": 0.4,
        "a": 0.9,
        "b": 0.3,
        "c": 0.5,
        "d": 0.4,
    }


def test_in_between_an_agent_is_drawn_toward_its_relatives_and_the_order_can_change() -> None:
    # a and e both resolved 8 of 10; a's child resolved 2, e's children 8 and 9.
    members = [
        Scored("seed", None, 5, 10),
        Scored("a", "seed", 8, 10),
        Scored("a1", "a", 2, 10),
        Scored("e", "seed", 8, 10),
        Scored("e1", "e", 8, 10),
        Scored("e2", "e", 9, 10),
    ]
    estimates = lineage_estimates(members, tau2=0.01)
    assert estimates["e"].mean > estimates["a"].mean
    assert 0.5 < estimates["a"].mean < 0.8  # pulled down by its child, up from the seed's 0.5
    assert estimates["a1"].mean > 0.2  # its parent's 8 of 10 speak for it
    # Relatives add evidence: every posterior is narrower than its own ten tasks give.
    pooled = 40 / 60
    own = pooled * (1 - pooled) / 10
    assert all(e.variance < own for e in estimates.values())


def test_the_step_variance_is_estimated_from_parent_child_pairs() -> None:
    pooled = 25 / 50
    noise = pooled * (1 - pooled) / 10
    pairs = [(0.9, 0.4), (0.3, 0.4), (0.5, 0.9), (0.4, 0.3)]
    expected = sum((c - p) ** 2 - 2 * noise for c, p in pairs) / len(pairs)
    assert step_variance(FAMILY) == pytest.approx(expected)
    # Children that differ from their parents less than noise explains: the floor, not below.
    alike = [Scored("seed", None, 5, 10), Scored("x", "seed", 5, 10), Scored("y", "seed", 5, 10)]
    assert step_variance(alike) == MIN_STEP_VARIANCE


def test_agents_without_a_scored_relative_or_attempt_are_handled() -> None:
    members = [
        Scored("alone", "elsewhere", 3, 4),  # its parent is not in the run: its own rate
        Scored("unscored", None, 0, 0),  # no attempt: no estimate
    ]
    estimates = lineage_estimates(members)
    assert set(estimates) == {"alone"}
    assert estimates["alone"].mean == 0.75
    assert step_variance(members) is None


def test_a_lineage_deeper_than_the_call_stack_is_estimated() -> None:
    depth = 5_000
    members = [Scored("0", None, 1, 2)] + [Scored(str(i), str(i - 1), i % 3, 2) for i in range(1, depth)]
    estimates = lineage_estimates(members)
    assert len(estimates) == depth
    assert all(0.0 <= e.mean <= 1.0 and math.isfinite(e.variance) for e in estimates.values())
