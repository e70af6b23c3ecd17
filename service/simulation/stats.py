"""Paired statistics over seeds: a sign test, bootstrap intervals, and crossing ratios.

Runs of different presets on the same seed share the landscape, the stage and held-out tasks and
the random streams of every mutation and evaluation keyed by the same step, agent and task
(common random numbers), so the comparison is paired by seed.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import comb, inf

TIE = 1e-12  # scores this close are one agent (both runs still name the seed, say)


def sign_test(wins: int, losses: int) -> float:
    """One-sided P(X >= wins) for X ~ Binomial(wins + losses, 1/2): ties are left out, as the
    usual sign test leaves them out. 1.0 when there is nothing but ties."""
    n = wins + losses
    if n == 0:
        return 1.0
    return float(sum(comb(n, k) for k in range(wins, n + 1)) / 2**n)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th quantile (0..1) by linear interpolation between order statistics."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    if ordered[low] == ordered[high]:  # also keeps inf values exact
        return ordered[low]
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def bootstrap(
    n: int,
    statistic: Callable[[Sequence[int]], float],
    *,
    resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, list[float]]:
    """A percentile bootstrap interval of `statistic` over `n` paired units (seeds): each resample
    draws n unit indices with replacement. Returns (low, high, the resampled values)."""
    if n < 1:
        raise ValueError("nothing to resample")
    rng = random.Random(f"bootstrap:{seed}")
    values = [statistic([rng.randrange(n) for _ in range(n)]) for _ in range(resamples)]
    tail = (1.0 - level) / 2.0
    return percentile(values, tail), percentile(values, 1.0 - tail), values


@dataclass(frozen=True)
class PairedComparison:
    """A policy's per-seed score against the baseline's on the same seeds."""

    wins: int  # seeds where the policy ends strictly higher
    ties: int
    losses: int
    p_value: float  # one-sided sign test, ties left out
    median_difference: float  # policy minus baseline, median over seeds
    interval: tuple[float, float]  # 95% bootstrap interval of that median

    @property
    def at_least(self) -> int:
        """Seeds where the policy ends >= the baseline (ties included): the issue's count."""
        return self.wins + self.ties

    @property
    def seeds(self) -> int:
        return self.wins + self.ties + self.losses


def compare(policy: Sequence[float], baseline: Sequence[float], *, resamples: int = 1000) -> PairedComparison:
    """Paired by position: policy[i] and baseline[i] are the same seed."""
    if len(policy) != len(baseline) or not policy:
        raise ValueError(f"need the same seeds on both sides, got {len(policy)} and {len(baseline)}")
    differences = [p - b for p, b in zip(policy, baseline, strict=True)]
    wins = sum(d > TIE for d in differences)
    losses = sum(d < -TIE for d in differences)
    low, high, _ = bootstrap(
        len(differences), lambda idx: statistics.median(differences[i] for i in idx), resamples=resamples
    )
    return PairedComparison(
        wins=wins,
        ties=len(differences) - wins - losses,
        losses=losses,
        p_value=sign_test(wins, losses),
        median_difference=statistics.median(differences),
        interval=(low, high),
    )


def median_curve(curves: Sequence[Sequence[float]], units: Sequence[int]) -> list[float]:
    """Point by point, the median over the chosen units' curves."""
    return [statistics.median(curves[i][g] for i in units) for g in range(len(curves[0]))]


def crossing(grid: Sequence[int], curve: Sequence[float], level: float) -> float:
    """The first grid point from which `curve` stays >= level to its end; inf if it never does."""
    reached = inf
    for e, value in zip(grid, curve, strict=True):
        if value < level:
            reached = inf
        elif reached == inf:
            reached = float(e)
    return reached


@dataclass(frozen=True)
class CrossingRatio:
    level: float
    baseline: float  # the baseline's own crossing (inf: never)
    policy: float
    ratio: float  # policy / baseline (inf: the policy never crosses)
    interval: tuple[float, float]  # 95% bootstrap interval over seeds, paired
    p_at_most_half: float  # bootstrap share of resamples with ratio <= 0.5


def crossing_ratio(
    grid: Sequence[int],
    policy: Sequence[Sequence[float]],
    baseline: Sequence[Sequence[float]],
    level: float,
    *,
    resamples: int = 400,
) -> CrossingRatio:
    """Evaluations for the policy's median curve to stay at `level`, over the baseline's own."""
    n = len(baseline)
    if len(policy) != n:
        raise ValueError("need the same seeds on both sides")
    everyone = range(n)

    def ratio(units: Sequence[int]) -> float:
        own = crossing(grid, median_curve(baseline, units), level)
        theirs = crossing(grid, median_curve(policy, units), level)
        if theirs == inf:
            return inf
        return theirs / own if own not in (0.0, inf) else (0.0 if theirs == 0.0 else inf)

    low, high, values = bootstrap(n, ratio, resamples=resamples)
    own = crossing(grid, median_curve(baseline, everyone), level)
    theirs = crossing(grid, median_curve(policy, everyone), level)
    return CrossingRatio(
        level=level,
        baseline=own,
        policy=theirs,
        ratio=ratio(everyone),
        interval=(low, high),
        p_at_most_half=sum(v <= 0.5 for v in values) / len(values),
    )
