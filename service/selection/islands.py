"""Islands with ring migration (OpenEvolve, ShinkaEvolve): separate sub-populations that
evolve apart and exchange their best now and then.

Step `n` belongs to island `n mod islands`; its parent is drawn among the agents present on
that island with DGM's score_child_prop weights, and its child lives there. The seed is on
every island. Every `migration_interval` steps, before that step's parent is drawn, the best
agent present on each island (highest score, then fewest children, then lowest id) migrates
to the next island of the ring, unless it is there already; a migrant stays at home and is
also a candidate on the island it migrated to. The driver records each migration as an
`island_migration` event, which is how later candidates know of it: the strategy itself
keeps no state, so the same archive and step number always give the same draw.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from service.selection.base import Candidate, StepContext, StrategyBase, check_k, checked, draw
from service.selection.score import ScoreChildProp


class Migration(BaseModel):
    """`agent_id`, the best on island `source`, becomes a candidate on island `target` too."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent_id: str
    source: int = Field(ge=0)
    target: int = Field(ge=0)


def present(candidate: Candidate, island: int) -> bool:
    return candidate.island is None or candidate.island == island or island in candidate.migrated_to


class Islands(StrategyBase):
    """`islands` sub-populations; parents drawn within the step's island by score_child_prop
    weights (`lambda`, `m`); the best of each island migrates to the next every
    `migration_interval` steps.

    `probabilities` (no step known) weighs all candidates as one island; the driver uses the
    step-aware methods.
    """

    name: ClassVar[str] = "islands"

    islands: int = Field(default=4, ge=1, le=1024)
    migration_interval: int = Field(default=10, ge=1)
    lambda_: float = Field(default=10.0, ge=0.0, alias="lambda")
    m: float = Field(default=0.5, ge=0.0, le=1.0)

    def _inner(self) -> ScoreChildProp:
        return ScoreChildProp(lambda_=self.lambda_, m=self.m)

    def island_of_step(self, number: int) -> int:
        return number % self.islands

    def on_island(self, candidates: Sequence[Candidate], island: int) -> list[Candidate]:
        """The candidates present on `island`: its own agents, the seed and migrants to it."""
        return [c for c in checked(candidates) if present(c, island)]

    def probabilities(self, candidates: Sequence[Candidate]) -> dict[str, float]:
        return self._inner().probabilities(candidates)

    def probabilities_for_step(self, candidates: Sequence[Candidate], step: StepContext) -> dict[str, float]:
        present = self.on_island(candidates, self.island_of_step(step.number))
        # An island nobody is on (possible only without the seed) draws from all.
        inner = self._inner().probabilities(present or candidates)
        return {c.agent_id: inner.get(c.agent_id, 0.0) for c in checked(candidates)}

    def select(self, candidates: Sequence[Candidate], rng: random.Random, k: int = 1) -> list[str]:
        check_k(k)
        return draw(self.probabilities(candidates), rng, k)

    def select_for_step(self, candidates: Sequence[Candidate], rng: random.Random, step: StepContext) -> str:
        return draw(self.probabilities_for_step(candidates, step), rng, 1)[0]

    def migrations(self, candidates: Sequence[Candidate], number: int) -> list[Migration]:
        """The migrations due before step `number`'s draw: none unless it is a multiple of
        `migration_interval`; all islands' best are taken from the same candidates."""
        if self.islands == 1 or number % self.migration_interval != 0:
            return []
        moves: list[Migration] = []
        for source in range(self.islands):
            there = self.on_island(candidates, source)
            if not there:
                continue
            best = min(there, key=lambda c: (-c.score, c.children, c.agent_id))
            target = (source + 1) % self.islands
            if present(best, target):
                continue  # already there: the seed, or a migrant that came round the ring
            moves.append(Migration(agent_id=best.agent_id, source=source, target=target))
        return moves
