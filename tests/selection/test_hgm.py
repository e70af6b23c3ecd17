"""hgm: Thompson sampling on pooled clade results, and its quadrature of the win chances."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from service.selection import Hgm, make_strategy
from service.selection.thompson import beta_max_probabilities
from tests.selection.cases import cand


def test_unevaluated_clades_are_equally_likely() -> None:
    probs = Hgm().probabilities([cand("a"), cand("b"), cand("c")])
    assert probs == pytest.approx({"a": 1 / 3, "b": 1 / 3, "c": 1 / 3}, abs=1e-9)


def test_two_clades_closed_form() -> None:
    # Beta(2, 1) (pdf 2x) against Beta(1, 1) (cdf x): P = integral of 2x * x = 2/3.
    probs = Hgm().probabilities([cand("won", resolved=1, attempted=1), cand("new")])
    assert probs == pytest.approx({"won": 2 / 3, "new": 1 / 3}, abs=1e-6)


def test_three_clades_closed_form() -> None:
    # A ~ Beta(2, 1): pdf 2x, cdf x^2.  B ~ Beta(1, 1): pdf 1, cdf x.
    # C ~ Beta(1, 2): pdf 2(1 - x), cdf 2x - x^2.
    # P(A) = int 2x * x * (2x - x^2)       = int 4x^3 - 2x^4 = 1 - 2/5   = 3/5
    # P(B) = int 1 * x^2 * (2x - x^2)      = int 2x^3 - x^4  = 1/2 - 1/5 = 3/10
    # P(C) = int 2(1 - x) * x^2 * x        = 2 (1/4 - 1/5)              = 1/10
    candidates = [
        cand("a", resolved=1, attempted=1),
        cand("b"),
        cand("c", resolved=0, attempted=1),
    ]
    assert Hgm().probabilities(candidates) == pytest.approx({"a": 0.6, "b": 0.3, "c": 0.1}, abs=1e-6)


def test_prior_params() -> None:
    # alpha = 2, beta = 1: X ~ Beta(2, 1) (pdf 2x); after one failure Y ~ Beta(2, 2)
    # (cdf 3y^2 - 2y^3). P(X > Y) = int 2x (3x^2 - 2x^3) = 6/4 - 4/5 = 7/10.
    strategy = make_strategy("hgm", {"alpha": 2.0, "beta": 1.0})
    probs = strategy.probabilities([cand("x"), cand("y", resolved=0, attempted=1)])
    assert probs == pytest.approx({"x": 0.7, "y": 0.3}, abs=1e-6)


def test_only_clade_results_matter() -> None:
    # Score and children are the other strategies' inputs; hgm ignores them.
    plain = [cand("a", resolved=2, attempted=3), cand("b", resolved=1, attempted=3)]
    dressed = [
        cand("a", score=0.0, children=9, resolved=2, attempted=3),
        cand("b", score=1.0, children=0, resolved=1, attempted=3),
    ]
    assert Hgm().probabilities(plain) == Hgm().probabilities(dressed)


def test_prefers_the_clade_that_resolves_more() -> None:
    strategy = Hgm()
    candidates = [cand("good", resolved=9, attempted=10), cand("poor", resolved=1, attempted=10)]
    counts = Counter(strategy.select(candidates, random.Random(5), k=20_000))
    assert counts["good"] / 20_000 > 0.995
    assert strategy.probabilities(candidates)["good"] > 0.999


def test_thompson_is_sharper_than_normalised_means() -> None:
    # Posterior means 0.89 and 0.79 normalise to 0.53; sampling favours the leader far more.
    candidates = [cand("a", resolved=89, attempted=99), cand("b", resolved=79, attempted=99)]
    assert Hgm().probabilities(candidates)["a"] > 0.95


@pytest.mark.parametrize(
    "clades",
    [
        # Narrow posteriors from thousands of evaluations, next to an unevaluated clade.
        [(9990, 10_000), (9985, 10_000), (0, 0)],
        [(5000, 10_000), (4950, 10_000), (0, 0)],
        [(0, 0), (1, 1), (2, 3), (3, 5), (40, 60), (0, 4)],
    ],
)
def test_probabilities_match_sampling(clades: list[tuple[int, int]]) -> None:
    candidates = [cand(f"c{i}", resolved=r, attempted=n) for i, (r, n) in enumerate(clades)]
    strategy = Hgm()
    probs = strategy.probabilities(candidates)
    counts = Counter(strategy.select(candidates, random.Random(11), k=20_000))
    for agent_id, p in probs.items():
        assert counts[agent_id] / 20_000 == pytest.approx(p, abs=0.015), agent_id


def test_identical_posteriors_share_equally() -> None:
    chances = beta_max_probabilities([(3.0, 2.0), (3.0, 2.0), (1.0, 1.0), (3.0, 2.0)])
    assert chances[0] == chances[1] == chances[3]
    assert sum(chances) == pytest.approx(1.0)


def test_far_behind_gets_nothing() -> None:
    assert beta_max_probabilities([(5.0, 995.0), (995.0, 5.0)]) == [0.0, 1.0]


def test_quadrature_needs_a_distribution() -> None:
    with pytest.raises(ValueError, match="no distributions"):
        beta_max_probabilities([])
