"""The step-aware half of the selection seam, for every registered strategy."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest

from service.selection import STRATEGIES, SelectionStrategy, StepContext, make_strategy
from tests.selection.cases import MIXED, cand

DRAWS = 20_000
# Islands and niches as the driver fills them in: the seed on every island, a migrant, niches.
PLACED = [
    MIXED[0].model_copy(update={"niche": "0-0"}),
    MIXED[1].model_copy(update={"island": 1, "niche": "0-1"}),
    MIXED[2].model_copy(update={"island": 0, "niche": "0-1", "migrated_to": (1,)}),
    MIXED[3].model_copy(update={"island": 2, "niche": "1-1"}),
]
STEPS = [StepContext(number=1), StepContext(number=2, siblings=("c",)), StepContext(number=6)]


@pytest.fixture(params=sorted(STRATEGIES))
def strategy(request: pytest.FixtureRequest) -> SelectionStrategy:
    return make_strategy(request.param, {})


@pytest.mark.parametrize("step", STEPS, ids=lambda s: f"step{s.number}")
def test_step_probabilities_form_a_distribution(strategy: SelectionStrategy, step: StepContext) -> None:
    probs = strategy.probabilities_for_step(PLACED, step)
    assert set(probs) == {c.agent_id for c in PLACED}
    assert all(0.0 <= p <= 1.0 for p in probs.values())
    assert math.fsum(probs.values()) == pytest.approx(1.0, abs=1e-12)


def test_step_draws_match_step_probabilities(strategy: SelectionStrategy) -> None:
    step = STEPS[1]
    probs = strategy.probabilities_for_step(PLACED, step)
    rng = random.Random(99)
    counts = Counter(strategy.select_for_step(PLACED, rng, step) for _ in range(DRAWS))
    for agent_id, p in probs.items():
        tolerance = 5 * math.sqrt(p * (1 - p) / DRAWS) + 1e-3
        assert counts[agent_id] / DRAWS == pytest.approx(p, abs=tolerance), agent_id


def test_step_draw_is_reproducible_and_ignores_order(strategy: SelectionStrategy) -> None:
    for step in STEPS:
        first = strategy.select_for_step(PLACED, random.Random(5), step)
        assert first == strategy.select_for_step(list(reversed(PLACED)), random.Random(5), step)


@pytest.mark.parametrize("name", ["score_child_prop", "score_prop", "best", "random", "hgm"])
def test_strategies_blind_to_steps_draw_as_select_does(name: str) -> None:
    strategy = make_strategy(name, {})
    for seed in range(20):
        step = StepContext(number=seed + 1, siblings=("a",))
        drawn = strategy.select_for_step(MIXED, random.Random(seed), step)
        assert [drawn] == strategy.select(MIXED, random.Random(seed))
        assert strategy.probabilities_for_step(MIXED, step) == strategy.probabilities(MIXED)


def test_empty_candidates_are_refused_per_step(strategy: SelectionStrategy) -> None:
    with pytest.raises(ValueError, match="empty list of candidates"):
        strategy.select_for_step([], random.Random(0), StepContext(number=1))
    with pytest.raises(ValueError, match="'a' is listed more than once"):
        strategy.probabilities_for_step([cand("a"), cand("a")], StepContext(number=1))
