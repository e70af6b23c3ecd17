"""The records a strategy's draw sees: the candidates, and the step a parent is drawn for."""

from __future__ import annotations

from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from service.selection.costs import Cost


class Candidate(BaseModel):
    """One archived agent that may be chosen as a parent in a run.

    `score` is the agent's fraction of resolved tasks in the run; `children`
    the number of children already created from it in this run;
    `clade_resolved` / `clade_attempted` pool the evaluations of the agent and
    all its descendants (used by `hgm`). `island` is the agent's home island (None:
    every island, as the seed) and `migrated_to` the islands it migrated to (`islands`);
    `niche` its behaviour descriptor (`map_elites`). `expected_cost` is what evaluating a
    child of it on the run's first stage is expected to cost (`service.selection.costs`), set by
    a strategy that weighs cost (`score_child_prop` with `cost_weight`) in its `prepare_draw`.
    Strategies that ignore them leave them at their defaults.
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
    expected_cost: Cost | None = None

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
