"""Which improve model a step uses, when a run lets a bandit choose (`models.improve_choice`).

The idea is ShinkaEvolve's: each model is an arm, and a step's reward is how much its child
improved on its parent. Here the reward is counted per dollar, so that a cheap model that
improves a little can win over a dear one that improves a little more:

    value(m) = sum of max(0, child score - parent score) / (sum of USD spent + USD_FLOOR per step)
    ucb(m)   = value(m) / the best value + exploration * sqrt(ln(steps) / steps of m)

A regression counts as no gain (a bad child is rejected anyway, the parent stays); a step with
no child gains 0. Steps still in flight count as pulls without a reward, so steps sent together
spread over the arms. A model never tried is tried first. Ties, and the order of untried models,
are drawn with `random.Random(seed)`: the same run seed and the same history choose the same
model. `USD_FLOOR` keeps a free local model's value finite (it is then its mean gain).

Pure: the driver gathers the history from its rows (service/driver/model_choice.py).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel

USD_FLOOR = 0.001  # per step: what a step costs at least, for the division
EXPLORATION = 1.0
TIE = 1e-12


@dataclass(frozen=True)
class Pull:
    """One earlier step's improve model; `gain` None while its child is still being scored."""

    model: str
    gain: float | None
    usd: float


class ArmStats(BaseModel):
    """What the bandit knew of one model when it chose (stored with the step)."""

    model: str
    pulls: int  # steps sent with it, finished or not
    finished: int
    gain: float  # summed over finished steps
    usd: float  # spent by finished steps
    value: float | None  # gain per dollar; None before any finished step
    ucb: float | None  # None: never tried


class BanditChoice(BaseModel):
    model: str
    why: str  # a sentence for the step's record
    arms: list[ArmStats]


def choose(models: Sequence[str], history: Sequence[Pull], *, seed: str) -> BanditChoice:
    """The model for the next step among `models` (at least one), from earlier steps' pulls."""
    rng = random.Random(seed)
    stats = [_stats(model, [p for p in history if p.model == model]) for model in models]
    untried = [arm for arm in stats if arm.pulls == 0]
    if untried:
        arm = untried[rng.randrange(len(untried))]
        return BanditChoice(model=arm.model, why=f"bandit: {arm.model} not tried yet", arms=stats)
    best_value = max((arm.value or 0.0) for arm in stats)
    total = sum(arm.pulls for arm in stats)
    scored = []
    for arm in stats:
        exploit = (arm.value or 0.0) / best_value if best_value > 0 else 0.0
        arm.ucb = exploit + EXPLORATION * math.sqrt(math.log(total) / arm.pulls)
        scored.append(arm)
    top = max(arm.ucb or 0.0 for arm in scored)
    tied = [arm for arm in scored if (arm.ucb or 0.0) >= top - TIE]
    arm = tied[rng.randrange(len(tied))]
    value = "no gain yet" if arm.value is None else f"{arm.value:.4g} score gain per $"
    return BanditChoice(
        model=arm.model,
        why=f"bandit: {arm.model} has the highest bound ({arm.ucb:.3f}; {value} over {arm.finished} steps)",
        arms=stats,
    )


def _stats(model: str, pulls: list[Pull]) -> ArmStats:
    finished = [p for p in pulls if p.gain is not None]
    gain = sum(max(0.0, p.gain or 0.0) for p in finished)
    usd = sum(p.usd for p in finished)
    value = gain / (usd + USD_FLOOR * len(finished)) if finished else None
    return ArmStats(
        model=model, pulls=len(pulls), finished=len(finished), gain=gain, usd=usd, value=value, ucb=None
    )
