"""A synthetic fitness landscape: hidden per-task solve probabilities and a mutation model.

An agent is a vector of logits, one per task of the pool; its chance of resolving task j is
sigmoid(logit_j). The seed's logits are `base - difficulty_j`, the difficulties drawn once per
landscape and `base` chosen so that the seed's mean chance is `seed_score`.

A child's logits are its parent's after one mutation, drawn as:

    noop         probability `noop`: the same code (its tree equals its parent's)
    invalid      probability `invalid`: no child (the step is rejected, nothing is evaluated)
    harmful      probability `harmful`: a shift N(harmful_mean, effect_sd) on every task
    large gain   probability `large_gain`: a shift N(large_mean, effect_sd)
    small        otherwise: a shift N(small_mean, small_sd)

plus, for every mutation that changes the code, independent per-task jitter N(0, jitter_sd).
With `clusters` K > 1 the tasks fall into K clusters (task j in cluster j mod K) and a positive
shift lands on one cluster drawn uniformly, multiplied by `cluster_gain`, leaving the others
alone: gains make specialists, which a small screening stage sees only through the few of its
tasks that fall in that cluster. Harmful shifts stay global.

The true score of an agent is its mean chance over the whole pool, which no run ever sees.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace
from enum import StrEnum


class Mutation(StrEnum):
    NOOP = "noop"
    INVALID = "invalid"
    HARMFUL = "harmful"
    LARGE_GAIN = "large_gain"
    SMALL = "small"


@dataclass(frozen=True)
class LandscapeConfig:
    name: str = "default"
    tasks: int = 200
    seed_score: float = 0.4
    difficulty_sd: float = 1.5
    noop: float = 0.10
    invalid: float = 0.05
    harmful: float = 0.20
    large_gain: float = 0.03
    small_mean: float = 0.0
    small_sd: float = 0.15
    harmful_mean: float = -0.6
    large_mean: float = 0.6
    effect_sd: float = 0.1
    jitter_sd: float = 0.1
    clusters: int = 1
    cluster_gain: float = 3.0

    def __post_init__(self) -> None:
        named = self.noop + self.invalid + self.harmful + self.large_gain
        if not 0.0 <= named <= 1.0 or min(self.noop, self.invalid, self.harmful, self.large_gain) < 0:
            raise ValueError(f"mutation probabilities must be >= 0 and sum to at most 1, got {named}")
        if self.tasks < 1 or self.clusters < 1 or self.clusters > self.tasks:
            raise ValueError("need 1 <= clusters <= tasks")
        if not 0.0 < self.seed_score < 1.0:
            raise ValueError("seed_score must lie strictly between 0 and 1")


LANDSCAPES: dict[str, LandscapeConfig] = {
    "default": LandscapeConfig(),
    "clusters": replace(LandscapeConfig(), name="clusters", clusters=5),
}


def sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@dataclass(frozen=True)
class Draw:
    """One mutation: its kind, the shift drawn and the cluster it landed on (None: every task)."""

    kind: Mutation
    shift: float = 0.0
    cluster: int | None = None


@dataclass
class Landscape:
    """One landscape instance (the difficulties are drawn from `seed`)."""

    config: LandscapeConfig
    seed: int
    difficulty: list[float] = field(init=False)

    def __post_init__(self) -> None:
        rng = random.Random(f"landscape:{self.config.name}:{self.seed}")
        self.difficulty = [rng.gauss(0.0, self.config.difficulty_sd) for _ in range(self.config.tasks)]

    @property
    def task_ids(self) -> list[str]:
        return [f"sim-{j:04d}" for j in range(self.config.tasks)]

    def cluster_of(self, task: int) -> int:
        return task % self.config.clusters

    def seed_logits(self) -> list[float]:
        """Logits whose mean chance is the configured seed score (bisection on the offset)."""
        low, high = -20.0, 20.0
        for _ in range(60):
            mid = (low + high) / 2.0
            if true_score([mid - d for d in self.difficulty]) < self.config.seed_score:
                low = mid
            else:
                high = mid
        return [(low + high) / 2.0 - d for d in self.difficulty]

    def draw(self, rng: random.Random) -> Draw:
        c = self.config
        u = rng.random()
        if u < c.noop:
            return Draw(Mutation.NOOP)
        if u < c.noop + c.invalid:
            return Draw(Mutation.INVALID)
        if u < c.noop + c.invalid + c.harmful:
            return Draw(Mutation.HARMFUL, rng.gauss(c.harmful_mean, c.effect_sd))
        if u < c.noop + c.invalid + c.harmful + c.large_gain:
            kind, shift = Mutation.LARGE_GAIN, rng.gauss(c.large_mean, c.effect_sd)
        else:
            kind, shift = Mutation.SMALL, rng.gauss(c.small_mean, c.small_sd)
        if c.clusters > 1 and shift > 0:
            return Draw(kind, shift * c.cluster_gain, rng.randrange(c.clusters))
        return Draw(kind, shift)

    def mutate(self, logits: list[float], draw: Draw, rng: random.Random) -> list[float]:
        """The child's logits after `draw` (the parent's list itself for a no-op)."""
        if draw.kind in (Mutation.NOOP, Mutation.INVALID):
            return logits
        jitter = self.config.jitter_sd
        return [
            x + rng.gauss(0.0, jitter) + (draw.shift if draw.cluster in (None, self.cluster_of(j)) else 0.0)
            for j, x in enumerate(logits)
        ]


def true_score(logits: list[float]) -> float:
    """The mean chance of resolving a task of the pool: what a run tries to raise, never sees."""
    return math.fsum(sigmoid(x) for x in logits) / len(logits)
