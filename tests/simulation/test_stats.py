"""The paired statistics of `clade sim`, on hand-made cases."""

from __future__ import annotations

import math

import pytest

from service.simulation.stats import bootstrap, compare, crossing, crossing_ratio, percentile, sign_test


def test_the_sign_test_is_the_binomial_tail() -> None:
    assert sign_test(5, 0) == 1 / 32
    assert sign_test(0, 5) == 1.0
    assert sign_test(3, 3) == pytest.approx(42 / 64)
    # The goal: 26 of 40 is just below 0.05, 25 of 40 is not.
    assert sign_test(26, 14) == pytest.approx(0.0403, abs=1e-4)
    assert sign_test(25, 15) > 0.05
    assert sign_test(0, 0) == 1.0  # nothing but ties: no evidence


def test_ties_are_counted_as_at_least_and_left_out_of_the_sign_test() -> None:
    policy = [0.5, 0.6, 0.4, 0.4, 0.7]
    baseline = [0.4, 0.5, 0.4, 0.5, 0.6]
    result = compare(policy, baseline, resamples=200)
    assert (result.wins, result.ties, result.losses) == (3, 1, 1)
    assert result.at_least == 4 and result.seeds == 5
    assert result.p_value == pytest.approx(sign_test(3, 1)) == pytest.approx(5 / 16)
    assert result.median_difference == pytest.approx(0.1)
    with pytest.raises(ValueError, match="same seeds"):
        compare([0.1], [0.1, 0.2])


def test_a_bootstrap_of_a_constant_is_that_constant_and_its_interval_holds_the_median() -> None:
    low, high, values = bootstrap(10, lambda idx: 0.25, resamples=50)
    assert low == high == 0.25 and len(values) == 50
    data = [float(i) for i in range(21)]
    low, high, _ = bootstrap(21, lambda idx: sorted(data[i] for i in idx)[10], resamples=500)
    assert low < 10.0 < high
    assert low > 4.0 and high < 16.0
    # Paired: one draw of unit indices serves both sides, so a constant difference has no spread.
    result = compare([x + 0.1 for x in data], data, resamples=300)
    assert result.interval == pytest.approx((0.1, 0.1))


def test_percentile_interpolates_and_keeps_infinity() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert percentile([1.0, math.inf, math.inf], 0.9) == math.inf


def test_a_crossing_is_where_the_curve_stays_at_the_level() -> None:
    grid = [0, 100, 200, 300, 400]
    assert crossing(grid, [0.1, 0.5, 0.2, 0.5, 0.6], 0.5) == 300  # it fell back once
    assert crossing(grid, [0.1, 0.2, 0.3, 0.4, 0.4], 0.5) == math.inf


def test_the_ratio_is_against_the_baselines_own_crossing_not_its_budget() -> None:
    grid = [0, 100, 200, 300, 400]
    baseline = [[0.1, 0.2, 0.3, 0.5, 0.5]] * 3  # crosses 0.5 at 300, not at the budget 400
    policy = [[0.1, 0.3, 0.5, 0.5, 0.5]] * 3  # at 200
    ratio = crossing_ratio(grid, policy, baseline, 0.5, resamples=50)
    assert (ratio.baseline, ratio.policy) == (300, 200)
    assert ratio.ratio == pytest.approx(2 / 3)
    assert ratio.interval == pytest.approx((2 / 3, 2 / 3))
    assert ratio.p_at_most_half == 0.0
    never = crossing_ratio(grid, [[0.1] * 5] * 3, baseline, 0.5, resamples=20)
    assert never.ratio == math.inf and never.policy == math.inf
