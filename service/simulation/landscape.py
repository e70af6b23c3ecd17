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

Further parameters (all off in `default` and `clusters`, whose numbers stay as they were):

- Stepping stones (`stepping` > 0): with that probability a mutation is a stepping stone, a
  global shift N(stepping_mean, effect_sd) (usually a loss) whose child and all its descendants
  are "unlocked": their large gains come with probability `unlocked_large_gain` and mean
  `unlocked_large_mean` instead. A worse agent is then the way up (the `deceptive` landscape).
- A noisy grader: a share `flaky` of the tasks resolve with probability `flaky_chance` whatever
  the agent (a fresh draw every trial, so the verdict flips between trials); a share
  `impossible` resolve for no agent. Mutations leave both alone.
- Per-task cost: each task has a cost in dollars, tokens and wall time, log-normal around
  `cost_usd` (median, sd `cost_sd` in log space); wall time `seconds` scales with the same draw,
  tokens are the dollars at `usd_per_mtok`. The simulated worker reports them per evaluation.
  One task's draw is capped at $10,000, a day and 10^9 tokens (a log-normal's tail has no end).

The true score of an agent is its mean chance over the whole pool (flaky tasks at their
chance, impossible ones at 0), which no run ever sees.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from contracts.records import MAX_CALL_TOKENS


class Mutation(StrEnum):
    NOOP = "noop"
    INVALID = "invalid"
    HARMFUL = "harmful"
    LARGE_GAIN = "large_gain"
    SMALL = "small"
    STEPPING = "stepping"  # a loss now that unlocks large gains for the child's descendants


# A landscape's name becomes part of file names (its plot) and table cells.
LANDSCAPE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")
LANDSCAPE_NAME_RULE = "1-64 letters, digits, '.', '_', '+' or '-', the first a letter or digit"
# Far above any real benchmark (SWE-bench has 2,294 tasks); each agent keeps a chance per task.
MAX_TASKS = 20_000
# Parameters on a log scale (log-odds; `cost_sd` in log dollars): past +/-20 a chance is 0 or 1
# to nine digits and a cost factor is 10^8, so larger values only overflow. `cluster_gain`
# multiplies a shift and is bounded the same way.
LOGIT_SCALE = (
    "difficulty_sd",
    "small_mean",
    "small_sd",
    "harmful_mean",
    "large_mean",
    "effect_sd",
    "jitter_sd",
    "stepping_mean",
    "unlocked_large_mean",
    "cost_sd",
    "cluster_gain",
)
MAX_LOGIT_SHIFT = 20.0
# How far the seed's true score may fall from `seed_score` (the bisection itself is exact).
SEED_SCORE_TOLERANCE = 1e-3
# A task costs at most $10,000, a day of wall time, at $10,000 per million tokens.
MAX_COST = {"cost_usd": 10_000.0, "seconds": 86_400.0, "usd_per_mtok": 10_000.0}
# A price under a dollar per 10^12 tokens would turn a task's dollars into tokens past any counter.
MIN_USD_PER_MTOK = 1e-6
# One task's drawn cost is capped at these (a log-normal's tail is unbounded; a worker reports
# one call of at most MAX_CALL_TOKENS tokens and MAX_CALL_USD dollars).
MAX_TASK_USD = MAX_COST["cost_usd"]
MAX_TASK_SECONDS = MAX_COST["seconds"]
MAX_TASK_TOKENS = MAX_CALL_TOKENS


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
    stepping: float = 0.0
    stepping_mean: float = -0.4
    unlocked_large_gain: float = 0.0
    unlocked_large_mean: float = 0.6
    flaky: float = 0.0
    flaky_chance: float = 0.5
    impossible: float = 0.0
    cost_usd: float = 0.25
    cost_sd: float = 0.8
    seconds: float = 300.0
    usd_per_mtok: float = 3.0

    def __post_init__(self) -> None:
        if not LANDSCAPE_NAME.fullmatch(self.name):
            raise ValueError(f"name {self.name!r}: {LANDSCAPE_NAME_RULE}")
        for name, value in vars(self).items():
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value}")
        shares = (self.noop, self.invalid, self.harmful, self.large_gain, self.stepping)
        named = sum(shares)
        if not 0.0 <= named <= 1.0 or min(shares) < 0:
            raise ValueError(
                "mutation probabilities (noop, invalid, harmful, large_gain, stepping) must be >= 0 "
                f"and sum to at most 1, got {named:g}"
            )
        if self.noop + self.invalid >= 1.0:
            raise ValueError(
                "noop + invalid must be under 1: with no edit that changes the code, no child is ever "
                "evaluated and a run never spends its budget"
            )
        if not 0.0 <= self.unlocked_large_gain <= 1.0 - (named - self.large_gain):
            raise ValueError("unlocked_large_gain must be >= 0 and fit beside the other mutation shares")
        if not 1 <= self.tasks <= MAX_TASKS:
            raise ValueError(f"tasks must lie between 1 and {MAX_TASKS:,}, got {self.tasks:,}")
        if self.clusters < 1 or self.clusters > self.tasks:
            raise ValueError("need 1 <= clusters <= tasks")
        if not 0.0 < self.seed_score < 1.0:
            raise ValueError("seed_score must lie strictly between 0 and 1")
        for share in ("flaky", "flaky_chance", "impossible"):
            if not 0.0 <= getattr(self, share) <= 1.0:
                raise ValueError(f"{share} must lie between 0 and 1")
        if self.flaky + self.impossible >= 1.0:
            raise ValueError("flaky + impossible must leave some tasks an agent can learn (< 1)")
        flaky, impossible = self.kind_counts()
        learnable = self.tasks - flaky - impossible
        if learnable < 1:
            raise ValueError(
                f"flaky and impossible take all {self.tasks} tasks ({flaky} and {impossible}, rounded): "
                "leave at least one an agent can learn"
            )
        # The seed's score counts flaky tasks at their chance and impossible ones at 0.
        lowest = flaky * self.flaky_chance / self.tasks
        highest = (flaky * self.flaky_chance + learnable) / self.tasks
        if not lowest < self.seed_score < highest:
            raise ValueError(
                f"seed_score must lie strictly between {lowest:g} and {highest:g} here: {flaky} flaky "
                f"tasks resolve at flaky_chance, {impossible} impossible ones never, "
                f"{learnable} are learnable"
            )
        for positive in ("difficulty_sd", "small_sd", "effect_sd", "jitter_sd", "cost_sd"):
            if getattr(self, positive) < 0:
                raise ValueError(f"{positive} must be >= 0")
        for positive in ("cost_usd", "seconds", "usd_per_mtok", "cluster_gain"):
            if getattr(self, positive) <= 0:
                raise ValueError(f"{positive} must be > 0")
        if self.usd_per_mtok < MIN_USD_PER_MTOK:
            raise ValueError(f"usd_per_mtok must be at least {MIN_USD_PER_MTOK:g}")
        for name in LOGIT_SCALE:
            if abs(getattr(self, name)) > MAX_LOGIT_SHIFT:
                raise ValueError(f"{name} must lie within +/-{MAX_LOGIT_SHIFT:g} (it is on a log scale)")
        for name, most in MAX_COST.items():
            if getattr(self, name) > most:
                raise ValueError(f"{name} must be at most {most:g}")

    def kind_counts(self) -> tuple[int, int]:
        """How many of the pool's tasks are flaky and how many impossible."""
        return round(self.flaky * self.tasks), round(self.impossible * self.tasks)


LANDSCAPES: dict[str, LandscapeConfig] = {
    "default": LandscapeConfig(),
    "clusters": replace(LandscapeConfig(), name="clusters", clusters=5),
    # DGM's published start: 0.20 overall (the seed below the 0.4 screening threshold), gains
    # calibrated so that the baseline gains about +0.30 in a DGM-sized run (docs/simulation.md).
    "dgm-start": LandscapeConfig(
        name="dgm-start", seed_score=0.2, large_gain=0.06, large_mean=0.65, small_mean=0.03
    ),
    # Rarer, larger gains: one mutation in a hundred, three times the default's shift.
    "medium-gains": LandscapeConfig(name="medium-gains", large_gain=0.01, large_mean=1.8, small_sd=0.1),
    # A plateau: few gains unless an agent descends from a stepping stone, which scores worse.
    "deceptive": LandscapeConfig(
        name="deceptive",
        large_gain=0.005,
        small_sd=0.08,
        stepping=0.06,
        stepping_mean=-0.5,
        unlocked_large_gain=0.15,
        unlocked_large_mean=0.8,
    ),
    # A fifth of the tasks a coin flip whatever the agent, 5% that no agent passes.
    "noisy-grader": LandscapeConfig(name="noisy-grader", flaky=0.2, impossible=0.05),
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


@dataclass(frozen=True)
class TaskCost:
    """What one evaluation of a task costs (the same for every agent)."""

    usd: float
    tokens: int
    seconds: float


class TaskKind(StrEnum):
    LEARNABLE = "learnable"
    FLAKY = "flaky"  # a coin flip whatever the agent
    IMPOSSIBLE = "impossible"  # no agent passes


@dataclass
class Landscape:
    """One landscape instance (the difficulties, kinds and costs are drawn from `seed`)."""

    config: LandscapeConfig
    seed: int
    difficulty: list[float] = field(init=False)
    kind: list[TaskKind] = field(init=False)
    cost: list[TaskCost] = field(init=False)

    def __post_init__(self) -> None:
        c = self.config
        rng = random.Random(f"landscape:{c.name}:{self.seed}")
        self.difficulty = [rng.gauss(0.0, c.difficulty_sd) for _ in range(c.tasks)]
        # Kinds and costs from their own streams, so that landscapes without them keep their draws.
        order = random.Random(f"kinds:{c.name}:{self.seed}").sample(range(c.tasks), c.tasks)
        flaky, impossible = c.kind_counts()
        self.kind = [TaskKind.LEARNABLE] * c.tasks
        for j in order[:flaky]:
            self.kind[j] = TaskKind.FLAKY
        for j in order[flaky : flaky + impossible]:
            self.kind[j] = TaskKind.IMPOSSIBLE
        costs = random.Random(f"costs:{c.name}:{self.seed}")
        self.cost = []
        for _ in range(c.tasks):
            scale = math.exp(costs.gauss(0.0, c.cost_sd))
            usd = min(c.cost_usd * scale, MAX_TASK_USD)
            tokens = min(round(usd / c.usd_per_mtok * 1e6), MAX_TASK_TOKENS)
            self.cost.append(TaskCost(usd, tokens, min(c.seconds * scale, MAX_TASK_SECONDS)))

    def chance(self, logits: Sequence[float], task: int) -> float:
        """The chance that an agent with `logits` resolves `task` in one trial."""
        kind = self.kind[task]
        if kind is TaskKind.FLAKY:
            return self.config.flaky_chance
        if kind is TaskKind.IMPOSSIBLE:
            return 0.0
        return sigmoid(logits[task])

    def score(self, logits: Sequence[float]) -> float:
        """The true score: the mean chance over the pool."""
        if all(k is TaskKind.LEARNABLE for k in self.kind):
            return true_score(logits)
        return math.fsum(self.chance(logits, j) for j in range(len(logits))) / len(logits)

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
            if self.score([mid - d for d in self.difficulty]) < self.config.seed_score:
                low = mid
            else:
                high = mid
        logits = [(low + high) / 2.0 - d for d in self.difficulty]
        reached = self.score(logits)
        # Past +/-20 the offset moves no chance: very wide difficulties can put a score out of reach.
        if abs(reached - self.config.seed_score) > SEED_SCORE_TOLERANCE:
            raise ValueError(
                f"landscape {self.config.name}, seed {self.seed}: seed_score {self.config.seed_score:g} "
                f"cannot be reached (at best {reached:.4f}); narrow difficulty_sd or move seed_score"
            )
        return logits

    def draw(self, rng: random.Random, *, unlocked: bool = False) -> Draw:
        """One mutation of a parent (`unlocked`: one descending from a stepping stone)."""
        c = self.config
        u = rng.random()
        if u < c.noop:
            return Draw(Mutation.NOOP)
        if u < c.noop + c.invalid:
            return Draw(Mutation.INVALID)
        if u < c.noop + c.invalid + c.harmful:
            return Draw(Mutation.HARMFUL, rng.gauss(c.harmful_mean, c.effect_sd))
        below = c.noop + c.invalid + c.harmful
        if u < below + c.stepping:
            return Draw(Mutation.STEPPING, rng.gauss(c.stepping_mean, c.effect_sd))
        below += c.stepping
        gain, mean = (
            (c.unlocked_large_gain, c.unlocked_large_mean) if unlocked else (c.large_gain, c.large_mean)
        )
        if u < below + gain:
            kind, shift = Mutation.LARGE_GAIN, rng.gauss(mean, c.effect_sd)
        else:
            kind, shift = Mutation.SMALL, rng.gauss(c.small_mean, c.small_sd)
        if c.clusters > 1 and shift > 0:
            return Draw(kind, shift * c.cluster_gain, rng.randrange(c.clusters))
        return Draw(kind, shift)

    def mutate(self, logits: Sequence[float], draw: Draw, rng: random.Random) -> Sequence[float]:
        """The child's logits after `draw` (the parent's own for a no-op)."""
        if draw.kind in (Mutation.NOOP, Mutation.INVALID):
            return logits
        jitter = self.config.jitter_sd
        return [
            x + rng.gauss(0.0, jitter) + (draw.shift if draw.cluster in (None, self.cluster_of(j)) else 0.0)
            for j, x in enumerate(logits)
        ]


def true_score(logits: Sequence[float]) -> float:
    """The mean chance of resolving a task of the pool: what a run tries to raise, never sees."""
    return math.fsum(sigmoid(x) for x in logits) / len(logits)
