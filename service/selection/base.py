"""The selection seam: the record a strategy sees, the protocol every strategy implements.

A strategy turns the run's parent candidates into a probability for each and
draws parents from it with the run's `random.Random`. Draws are with
replacement (k parents may repeat, as in DGM) and depend on the *set* of
candidates, not on the order the caller listed them in: the same archive and
the same RNG state give the same parents.

The driver asks for one step's parent with `select_for_step`, giving the step's
number and, in a group, the parents already chosen for it (`StepContext`).
Strategies blind to steps inherit defaults that make exactly the `select` draw;
islands and groups use the step, still as pure functions of their inputs.

What a strategy records beyond its draw (islands, niches, group rounds, an experience pool)
goes through the policy hooks of `service.selection.policy`, which `StrategyBase` inherits
as no-ops: the driver calls them and names no strategy.
"""

from __future__ import annotations

import itertools
import random
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import ClassVar, Protocol, Self, runtime_checkable

from pydantic import BaseModel, ConfigDict

from service.selection.candidates import Candidate, StepContext
from service.selection.policy import PolicyDefaults, SearchPolicy

__all__ = [
    "Candidate",
    "SelectionStrategy",
    "StepContext",
    "StrategyBase",
    "check_k",
    "checked",
    "draw",
]


@runtime_checkable
class SelectionStrategy(SearchPolicy, Protocol):
    """Chooses parents among candidates (raises `ValueError` on an empty candidate list), and
    keeps its bookkeeping through the policy hooks it inherits (`service.selection.policy`)."""

    name: ClassVar[str]

    def probabilities(self, candidates: Sequence[Candidate]) -> dict[str, float]:
        """Each candidate's probability of being drawn by one `select` draw (sums to 1)."""
        ...

    def select(self, candidates: Sequence[Candidate], rng: random.Random, k: int = 1) -> list[str]:
        """`k` parent ids drawn independently (with replacement) using only `rng`."""
        ...

    def probabilities_for_step(self, candidates: Sequence[Candidate], step: StepContext) -> dict[str, float]:
        """Each candidate's probability of being the parent of `step` (sums to 1)."""
        ...

    def select_for_step(self, candidates: Sequence[Candidate], rng: random.Random, step: StepContext) -> str:
        """The parent of `step`, drawn using only `rng`; strategies blind to steps call `select`."""
        ...

    def budget_defaults(self) -> Mapping[str, int]:
        """`budget` fields a run naming this strategy gets at plan time when it gives none."""
        ...


def checked(candidates: Sequence[Candidate]) -> list[Candidate]:
    """The candidates sorted by agent id; `ValueError` if there are none or an id repeats."""
    if not candidates:
        raise ValueError("cannot select a parent from an empty list of candidates")
    ordered = sorted(candidates, key=lambda c: c.agent_id)
    for before, after in itertools.pairwise(ordered):
        if before.agent_id == after.agent_id:
            raise ValueError(f"candidate {before.agent_id!r} is listed more than once")
    return ordered


def check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")


def draw(probabilities: Mapping[str, float], rng: random.Random, k: int) -> list[str]:
    """`k` ids drawn with replacement; the draw does not depend on the mapping's order."""
    check_k(k)
    ids = sorted(probabilities)
    return rng.choices(ids, weights=[probabilities[i] for i in ids], k=k)


class StrategyBase(PolicyDefaults, BaseModel, ABC):
    """A strategy is its own validated parameter set: unknown or bad params are refused.

    Subclasses set `name`, declare their parameters as fields and implement
    `probabilities`; `select` draws from those probabilities unless overridden.
    """

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        allow_inf_nan=False,
        validate_by_name=True,
        validate_by_alias=True,
    )

    name: ClassVar[str]

    @classmethod
    def from_params(cls, params: Mapping[str, float]) -> Self:
        """Build from a run config's `selection.params`; raises pydantic's ValidationError."""
        return cls.model_validate(dict(params))

    @abstractmethod
    def probabilities(self, candidates: Sequence[Candidate]) -> dict[str, float]: ...

    def select(self, candidates: Sequence[Candidate], rng: random.Random, k: int = 1) -> list[str]:
        check_k(k)
        return draw(self.probabilities(candidates), rng, k)

    def probabilities_for_step(self, candidates: Sequence[Candidate], step: StepContext) -> dict[str, float]:
        return self.probabilities(candidates)

    def budget_defaults(self) -> Mapping[str, int]:
        return {}

    def select_for_step(self, candidates: Sequence[Candidate], rng: random.Random, step: StepContext) -> str:
        # Exactly the draw `select` makes, so a strategy blind to steps picks as it always did.
        return self.select(candidates, rng, k=1)[0]
