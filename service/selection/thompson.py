"""P(X_i is the largest) for independent Beta variables X_i, by deterministic quadrature.

P_i = integral over x of pdf_i(x) * prod_{j != i} cdf_j(x). The distributions
are discretised into cells: a uniform grid over [0, 1], refined by a second
uniform grid over the window where the maximum can fall ([largest lower bound,
largest upper bound], bounds being mean -/+ WINDOW_SDS standard deviations), so
a posterior narrowed by thousands of evaluations is still resolved. A cell's
mass is the pdf at its midpoint times its width, normalised per distribution;
a CDF at a cell counts half of the cell's own mass. Identical distributions are
computed once, so the cost is O(distinct distributions * GRID_CELLS) (about 0.5 s
for 500 distinct ones).

Accuracy: within 1e-6 of closed forms on small integer-parameter cases; the
absolute error is at most about 2e-4, reached when a posterior much narrower
than a coarse cell (1/GRID_CELLS) competes with a wide one.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

GRID_CELLS = 2048
WINDOW_SDS = 10.0


def beta_max_probabilities(params: Sequence[tuple[float, float]]) -> list[float]:
    """For Beta(a_i, b_i), all a_i, b_i > 0: each variable's probability of being the largest."""
    if not params:
        raise ValueError("no distributions given")
    count = Counter(params)
    windows = {p: _window(*p) for p in count}
    start = max(lo for lo, _ in windows.values())
    end = max(hi for _, hi in windows.values())
    # A variable whose window ends below `start` loses to the one whose window starts
    # there, but for both being 10 sd out: it wins nothing and its CDF is 1 in the window.
    contenders = [p for p, (_, hi) in windows.items() if hi > start]

    edges = _edges(start, end)
    first = bisect.bisect_left(edges, start)
    logs = _cell_logs(edges)
    masses: list[list[float]] = []
    log_cdfs: list[list[float]] = []
    for a, b in contenders:
        m = _masses(a, b, logs)
        masses.append(m[first:])
        log_cdfs.append(_log_mid_cdf(m[first:], below=sum(m[:first])))
    repeats = [count[p] for p in contenders]

    wins = [0.0] * len(contenders)
    for cell in range(len(edges) - 1 - first):
        column = [log_cdf[cell] for log_cdf in log_cdfs]
        if -math.inf in column:
            continue  # some variable is surely below this cell, so no other wins here
        total = sum(n * v for n, v in zip(repeats, column, strict=True))
        for g, own in enumerate(column):
            wins[g] += masses[g][cell] * math.exp(total - own)
    norm = math.fsum(w * n for w, n in zip(wins, repeats, strict=True))
    chance = {p: w / norm for p, w in zip(contenders, wins, strict=True)}
    return [chance.get(p, 0.0) for p in params]


def _window(a: float, b: float) -> tuple[float, float]:
    """[mean - WINDOW_SDS sd, mean + WINDOW_SDS sd] of Beta(a, b), clipped to [0, 1]."""
    mean = a / (a + b)
    sd = math.sqrt(a * b / ((a + b) ** 2 * (a + b + 1.0)))
    return max(0.0, mean - WINDOW_SDS * sd), min(1.0, mean + WINDOW_SDS * sd)


def _edges(start: float, end: float) -> list[float]:
    """Cell edges from 0 to 1: the coarse grid outside [start, end], the fine grid inside."""
    fine = [start + (end - start) * k / GRID_CELLS for k in range(GRID_CELLS)] + [end]
    coarse = [k / GRID_CELLS for k in range(GRID_CELLS + 1)]
    return sorted({*fine, *(e for e in coarse if e < start or e > end)})


class _CellLogs(NamedTuple):
    """Per cell: log of its midpoint x, log(1 - x) and log of its width."""

    x: list[float]
    one_minus_x: list[float]
    width: list[float]


def _cell_logs(edges: Sequence[float]) -> _CellLogs:
    cells = list(itertools.pairwise(edges))
    mids = [(lo + hi) / 2.0 for lo, hi in cells]
    return _CellLogs(
        x=[math.log(x) for x in mids],
        one_minus_x=[math.log1p(-x) for x in mids],
        width=[math.log(hi - lo) for lo, hi in cells],
    )


def _masses(a: float, b: float, logs: _CellLogs) -> list[float]:
    """Beta(a, b)'s probability of each cell: pdf at the midpoint times width, normalised."""
    am1, bm1 = a - 1.0, b - 1.0
    log_mass = [
        am1 * lx + bm1 * l1 + lw for lx, l1, lw in zip(logs.x, logs.one_minus_x, logs.width, strict=True)
    ]
    top = max(log_mass)
    weights = [math.exp(v - top) for v in log_mass]
    total = sum(weights)
    return [w / total for w in weights]


def _log_mid_cdf(masses: Sequence[float], below: float) -> list[float]:
    """log P(X < cell midpoint): `below` plus the cells before plus half of the cell's own."""
    out: list[float] = []
    for mass in masses:
        mid = below + mass / 2.0
        out.append(math.log(mid) if mid > 0.0 else -math.inf)
        below += mass
    return out
