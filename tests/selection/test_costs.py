"""Expected cost per agent and task (`service.selection.costs`), and `score_child_prop`'s `cost_weight`."""

from __future__ import annotations

import pytest

from service.selection import ScoreChildProp, make_strategy
from service.selection.costs import Cost, CostModel, CostSample, common_unit
from tests.selection.cases import cand

SAMPLES = [
    CostSample("a", "t1", usd=0.2, tokens=100, seconds=10),
    CostSample("b", "t1", usd=0.4, tokens=300, seconds=30),
    CostSample("b", "t2", usd=0.9, tokens=900, seconds=80),
    CostSample("b", "t2", usd=1.1, tokens=1100, seconds=120),  # a second trial: its mean counts
]


def test_a_measured_pair_is_its_own_mean_and_another_is_the_tasks_mean_at_the_agents_level() -> None:
    model = CostModel(SAMPLES)
    assert model.per_task("a", "t1") == Cost(usd=0.2, tokens=100, seconds=10)
    assert model.per_task("b", "t2") == Cost(usd=1.0, tokens=1000, seconds=100)
    # "a" spends 2/3 of the mean on t1 in dollars, half in tokens and seconds: so on t2 too.
    estimate = model.per_task("a", "t2")
    assert estimate is not None
    assert (estimate.usd, estimate.tokens, estimate.seconds) == pytest.approx((1.0 * 2 / 3, 500, 50))
    # An agent never measured is at the task's mean; a task never measured at the run's mean.
    fresh = model.per_task("new", "t1")
    assert fresh is not None and (fresh.usd, fresh.tokens, fresh.seconds) == pytest.approx((0.3, 200, 20))
    unseen = model.per_task("new", "t9")
    assert unseen is not None and unseen.usd == pytest.approx((0.2 + 0.4 + 1.0) / 3)
    total = model.expected("a", ["t1", "t2"])
    assert total is not None and total.usd == pytest.approx(0.2 + 2 / 3)


def test_with_nothing_recorded_there_is_no_estimate() -> None:
    model = CostModel([])
    assert model.empty and model.per_task("a", "t1") is None and model.expected("a", ["t1"]) is None


def test_cost_weight_divides_each_weight_by_the_expected_cost() -> None:
    cheap = cand("x", score=0.5).model_copy(update={"expected_cost": Cost(usd=0.1, tokens=10, seconds=1)})
    dear = cand("y", score=0.5).model_copy(update={"expected_cost": Cost(usd=0.3, tokens=10, seconds=1)})
    per_dollar = ScoreChildProp.from_params({"cost_weight": 1.0}).probabilities([cheap, dear])
    assert per_dollar == pytest.approx({"x": 0.75, "y": 0.25})  # 1/0.1 : 1/0.3
    squared = ScoreChildProp.from_params({"cost_weight": 2.0}).probabilities([cheap, dear])
    assert squared == pytest.approx({"x": 0.9, "y": 0.1})  # 100 : 11.1
    assert ScoreChildProp().probabilities([cheap, dear]) == pytest.approx({"x": 0.5, "y": 0.5})


def test_a_free_model_is_weighed_by_tokens_and_an_unknown_cost_by_nothing() -> None:
    free = [
        cand("x").model_copy(update={"expected_cost": Cost(usd=0.0, tokens=100, seconds=5)}),
        cand("y").model_copy(update={"expected_cost": Cost(usd=0.0, tokens=300, seconds=5)}),
    ]
    assert common_unit([c.expected_cost for c in free]) == "tokens"
    weighed = make_strategy("score_child_prop", {"cost_weight": 1.0}).probabilities(free)
    assert weighed == pytest.approx({"x": 0.75, "y": 0.25})
    unknown = [free[0], cand("y")]  # no estimate for "y": cost cannot be compared, so it is not
    assert make_strategy("score_child_prop", {"cost_weight": 1.0}).probabilities(unknown) == pytest.approx(
        {"x": 0.5, "y": 0.5}
    )


def test_cost_weight_is_refused_below_zero() -> None:
    with pytest.raises(ValueError, match="cost_weight"):
        ScoreChildProp.from_params({"cost_weight": -1.0})
