"""One suite every registered strategy must pass: the selection seam's contract."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest

from service.selection import STRATEGIES, SelectionStrategy, make_strategy
from tests.selection.cases import MIXED, cand

DRAWS = 20_000


@pytest.fixture(params=sorted(STRATEGIES))
def strategy(request: pytest.FixtureRequest) -> SelectionStrategy:
    return make_strategy(request.param, {})


def test_registered_under_its_own_name(strategy: SelectionStrategy) -> None:
    assert isinstance(strategy, SelectionStrategy)
    assert STRATEGIES[strategy.name] is type(strategy)


def test_empty_candidates_are_refused(strategy: SelectionStrategy) -> None:
    with pytest.raises(ValueError, match="empty list of candidates"):
        strategy.probabilities([])
    with pytest.raises(ValueError, match="empty list of candidates"):
        strategy.select([], random.Random(0))


def test_repeated_agent_id_is_refused(strategy: SelectionStrategy) -> None:
    with pytest.raises(ValueError, match="'a' is listed more than once"):
        strategy.probabilities([cand("a"), cand("b"), cand("a", score=1.0)])
    with pytest.raises(ValueError, match="'a' is listed more than once"):
        strategy.select([cand("a"), cand("a")], random.Random(0))


@pytest.mark.parametrize("k", [0, -1])
def test_k_below_one_is_refused(strategy: SelectionStrategy, k: int) -> None:
    with pytest.raises(ValueError, match="k must be at least 1"):
        strategy.select(MIXED, random.Random(0), k=k)


def test_probabilities_form_a_distribution_over_the_candidates(
    strategy: SelectionStrategy,
) -> None:
    probs = strategy.probabilities(MIXED)
    assert set(probs) == {c.agent_id for c in MIXED}
    assert all(0.0 <= p <= 1.0 for p in probs.values())
    assert math.fsum(probs.values()) == pytest.approx(1.0, abs=1e-12)


def test_single_candidate_is_always_chosen(strategy: SelectionStrategy) -> None:
    only = [cand("only", score=0.0, children=7)]
    assert strategy.probabilities(only) == {"only": pytest.approx(1.0)}
    assert strategy.select(only, random.Random(0), k=5) == ["only"] * 5


def test_select_is_reproducible_with_a_seeded_rng(strategy: SelectionStrategy) -> None:
    first = strategy.select(MIXED, random.Random(42), k=50)
    second = strategy.select(MIXED, random.Random(42), k=50)
    assert first == second
    assert len(first) == 50
    assert set(first) <= {c.agent_id for c in MIXED}


def test_select_default_k_is_one(strategy: SelectionStrategy) -> None:
    assert len(strategy.select(MIXED, random.Random(0))) == 1


def test_candidate_order_does_not_matter(strategy: SelectionStrategy) -> None:
    shuffled = list(reversed(MIXED))
    assert strategy.probabilities(shuffled) == strategy.probabilities(MIXED)
    assert strategy.select(shuffled, random.Random(7), k=30) == strategy.select(MIXED, random.Random(7), k=30)


def test_select_uses_only_the_given_rng(strategy: SelectionStrategy) -> None:
    before = random.getstate()
    strategy.select(MIXED, random.Random(0), k=10)
    assert random.getstate() == before


def test_draws_match_probabilities(strategy: SelectionStrategy) -> None:
    probs = strategy.probabilities(MIXED)
    counts = Counter(strategy.select(MIXED, random.Random(2024), k=DRAWS))
    for agent_id, p in probs.items():
        # Five standard deviations of a binomial frequency, plus room for hgm's quadrature.
        tolerance = 5 * math.sqrt(p * (1 - p) / DRAWS) + 1e-3
        assert counts[agent_id] / DRAWS == pytest.approx(p, abs=tolerance), agent_id
