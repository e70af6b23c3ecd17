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
"""

from __future__ import annotations

import itertools
import random
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import ClassVar, Protocol, Self, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Candidate(BaseModel):
    """One archived agent that may be chosen as a parent in a run.

    `score` is the agent's fraction of resolved tasks in the run; `children`
    the number of children already created from it in this run;
    `clade_resolved` / `clade_attempted` pool the evaluations of the agent and
    all its descendants (used by `hgm`). `island` is the agent's home island (None:
    every island, as the seed) and `migrated_to` the islands it migrated to (`islands`);
    `niche` its behaviour descriptor (`map_elites`). Strategies that ignore them
    leave them at their defaults.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    agent_id: str = Field(min_length=1)
    score: float = Field(ge=0.0, le=1.0)
    children: int = Field(ge=0)
    clade_resolved: int = Field(ge=0)
    clade_attempted: int = Field(ge=0)
    island: int | None = Field(default=None, ge=0)
    migrated_to: tuple[int, ...] = ()
    niche: str | None = None

    @model_validator(mode="after")
    def _resolved_within_attempted(self) -> Self:
        if self.clade_resolved > self.clade_attempted:
            raise ValueError(
                f"clade_resolved ({self.clade_resolved}) exceeds clade_attempted ({self.clade_attempted})"
            )
        return self


class StepContext(BaseModel):
    """The step a parent is chosen for: its number in the run (1, 2, ...) and, for a group
    strategy, the parents already chosen for the other steps of its group."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    number: int = Field(ge=1)
    siblings: tuple[str, ...] = ()


@runtime_checkable
class SelectionStrategy(Protocol):
    """Chooses parents among candidates. Raises `ValueError` on an empty candidate list."""

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


class StrategyBase(BaseModel, ABC):
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

    def select_for_step(self, candidates: Sequence[Candidate], rng: random.Random, step: StepContext) -> str:
        # Exactly the draw `select` makes, so a strategy blind to steps picks as it always did.
        return self.select(candidates, rng, k=1)[0]
