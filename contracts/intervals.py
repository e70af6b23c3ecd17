"""Wilson score intervals: how sure a resolved fraction on a few tasks is.

A score of 3/5 is not 0.6; its 95% Wilson interval is about [0.23, 0.88]. The interval is
well behaved at 0 and n (unlike the normal approximation) and never leaves [0, 1].
"""

from __future__ import annotations

import math
from statistics import NormalDist

Z_95 = 1.959963984540054  # the standard normal's 97.5% quantile


def wilson(resolved: int, attempted: int, z: float = Z_95) -> tuple[float, float]:
    """The (low, high) Wilson interval of `resolved` successes in `attempted` trials; (0, 1) for none."""
    if attempted < 0 or not 0 <= resolved <= attempted:
        raise ValueError(f"need 0 <= resolved <= attempted, got {resolved}/{attempted}")
    if attempted == 0:
        return 0.0, 1.0
    p = resolved / attempted
    z2n = z * z / attempted
    centre = (p + z2n / 2) / (1 + z2n)
    half = z * math.sqrt(p * (1 - p) / attempted + z2n / (4 * attempted)) / (1 + z2n)
    low = 0.0 if resolved == 0 else max(0.0, centre - half)
    high = 1.0 if resolved == attempted else min(1.0, centre + half)
    return low, high


def simultaneous_z(compared: int) -> float:
    """The z of 95% intervals that hold for `compared` agents at once (Bonferroni).

    An agent named best because its results on some tasks were the highest of several is, on
    those tasks, luckier than its true score: the plain 95% bound of the winner of 8 near-equal
    agents falls above its true score far more often than 1 time in 40. Intervals that all hold
    together hold for the winner too, whichever it is. One agent: Z_95 itself.
    """
    if compared < 1:
        raise ValueError(f"need at least one agent compared, got {compared}")
    if compared == 1:
        return Z_95
    return NormalDist().inv_cdf(1.0 - 0.025 / compared)
