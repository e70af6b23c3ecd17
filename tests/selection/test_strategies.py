"""Exact probabilities of the deterministic strategies on hand-computed examples."""

from __future__ import annotations

import pytest

from service.selection import Best, ScoreChildProp, ScoreProp, Uniform, make_strategy
from tests.selection.cases import cand

LN3 = 1.0986122886681098  # ln 3, so that sigmoid(ln 3) = 3/4 and sigmoid(-ln 3) = 1/4

DGM_EXAMPLE = [
    cand("a", score=0.2, children=0),
    cand("b", score=0.5, children=1),
    cand("c", score=0.9, children=3),
]


def test_score_child_prop_defaults_are_dgms() -> None:
    strategy = ScoreChildProp()
    assert (strategy.lambda_, strategy.m) == (10.0, 0.5)


def test_score_child_prop_dgm_example() -> None:
    # lambda = 10, m = 0.5:
    #   a: sigmoid(10 * -0.3) / 1 = 1 / (1 + e^3)       = 0.04742587317756678
    #   b: sigmoid(0) / 2         = 0.5 / 2             = 0.25
    #   c: sigmoid(10 * 0.4) / 4  = 0.98201379003790845 / 4 = 0.24550344750947712
    #   sum                                              = 0.5429293206870439
    probs = ScoreChildProp().probabilities(DGM_EXAMPLE)
    assert probs == {
        "a": pytest.approx(0.08735183636343718, rel=1e-9),
        "b": pytest.approx(0.46046509273737555, rel=1e-9),
        "c": pytest.approx(0.45218307089918727, rel=1e-9),
    }


def test_score_child_prop_lambda_zero_is_children_only() -> None:
    # sigmoid(0) = 1/2 for all: weights 1/2, 1/4, 1/8 -> 4/7, 2/7, 1/7.
    probs = make_strategy("score_child_prop", {"lambda": 0.0}).probabilities(DGM_EXAMPLE)
    assert probs == {
        "a": pytest.approx(4 / 7),
        "b": pytest.approx(2 / 7),
        "c": pytest.approx(1 / 7),
    }


def test_score_child_prop_lambda_and_m() -> None:
    # lambda = 2 ln 3, m = 0.5: scores 0, 0.5, 1 give sigmoid(-ln 3), sigmoid(0), sigmoid(ln 3)
    # = 1/4, 1/2, 3/4; children 0, 0, 2 -> weights 1/4, 1/2, 1/4.
    strategy = make_strategy("score_child_prop", {"lambda": 2 * LN3, "m": 0.5})
    candidates = [cand("a", 0.0, 0), cand("b", 0.5, 0), cand("c", 1.0, 2)]
    assert strategy.probabilities(candidates) == {
        "a": pytest.approx(0.25),
        "b": pytest.approx(0.5),
        "c": pytest.approx(0.25),
    }
    # m = 0 moves the midpoint: scores 0, 0.5 give sigmoid(0), sigmoid(ln 3) = 1/2, 3/4.
    shifted = make_strategy("score_child_prop", {"lambda": 2 * LN3, "m": 0.0})
    assert shifted.probabilities([cand("a", 0.0), cand("b", 0.5)]) == {
        "a": pytest.approx(2 / 5),
        "b": pytest.approx(3 / 5),
    }


def test_score_child_prop_survives_a_huge_lambda() -> None:
    # Every sigmoid underflows to 0 in linear space; in log space the better one wins.
    strategy = make_strategy("score_child_prop", {"lambda": 1e6})
    probs = strategy.probabilities([cand("a", 0.1), cand("b", 0.2, children=5)])
    assert probs == {"a": 0.0, "b": 1.0}


def test_score_prop_is_proportional_to_score() -> None:
    probs = ScoreProp().probabilities([cand("a", 0.1, children=9), cand("b", 0.3), cand("c", 0.4)])
    assert probs == {"a": pytest.approx(0.125), "b": pytest.approx(0.375), "c": 0.5}


def test_score_prop_all_zero_is_uniform() -> None:
    probs = ScoreProp().probabilities([cand("a"), cand("b"), cand("c")])
    assert probs == {"a": 1 / 3, "b": 1 / 3, "c": 1 / 3}


def test_score_prop_zero_score_is_never_chosen() -> None:
    probs = ScoreProp().probabilities([cand("a", 0.0), cand("b", 0.6)])
    assert probs == {"a": 0.0, "b": 1.0}


def test_best_takes_the_highest_score() -> None:
    probs = Best().probabilities([cand("a", 0.5), cand("b", 0.9, children=4), cand("c", 0.7)])
    assert probs == {"a": 0.0, "b": 1.0, "c": 0.0}


def test_best_breaks_ties_by_fewest_children_then_agent_id() -> None:
    by_children = [cand("a", 0.9, children=2), cand("b", 0.9, children=1), cand("c", 0.5)]
    assert Best().probabilities(by_children)["b"] == 1.0
    by_id = [cand("z", 0.9, children=1), cand("m", 0.9, children=1), cand("x", 0.9, children=1)]
    assert Best().probabilities(by_id) == {"m": 1.0, "x": 0.0, "z": 0.0}


def test_random_is_uniform_whatever_the_scores() -> None:
    candidates = [cand("a", 1.0), cand("b", 0.0, children=10), cand("c", 0.5), cand("d", 0.2)]
    assert Uniform().probabilities(candidates) == {i: 0.25 for i in "abcd"}
