"""Islands with ring migration (OpenEvolve, ShinkaEvolve): separate sub-populations that
evolve apart and exchange their best now and then.

Step `n` belongs to island `n mod islands`; its parent is drawn among the agents present on
that island with DGM's score_child_prop weights, and its child lives there. The seed is on
every island. Every `migration_interval` steps, before that step's parent is drawn, the best
agent present on each island (highest score, then fewest children, then lowest id) migrates
to the next island of the ring, unless it is there already; a migrant stays at home and is
also a candidate on the island it migrated to. Each migration is recorded as an
`island_migration` event, which is how later candidates know of it: the strategy object
keeps no state, so the same archive and step number always give the same draw.

Bookkeeping (the policy hooks): after admission, an agent made in step n is placed on island
`n mod islands` (the island its parent was drawn on; the seed has none, which means every
island). Before a step's draw, the migrations due are recorded as `island_migration` events
(agent, from, to, step) and read back as the candidates' `migrated_to`.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from contracts.events import IslandMigration, kind_of
from service.selection.base import Candidate, StepContext, StrategyBase, check_k, checked, draw
from service.selection.policy import RunScope
from service.selection.score import ScoreChildProp

MIGRATION = kind_of(IslandMigration)


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

    def after_admission(self, scope: RunScope) -> None:
        """Each new agent on the island of the step that made it."""
        ledger = scope.ledger
        for member in ledger.members():
            # The seed (step 0) is on every island.
            if (
                member.island is None
                and member.step_number is not None
                and member.agent_id != ledger.seed_agent_id
            ):
                ledger.set_island(member.agent_id, self.island_of_step(member.step_number))

    def prepare_draw(self, scope: RunScope, pool: Sequence[Candidate], number: int) -> Sequence[Candidate]:
        """The candidates with the islands they migrated to, once the migrations due before
        step `number`'s draw are recorded."""
        pool = with_migrations(scope, pool)
        moves = self.migrations(pool, number)
        for move in moves:
            scope.ledger.record(
                MIGRATION, {"agent_id": move.agent_id, "from": move.source, "to": move.target, "step": number}
            )
        return with_migrations(scope, pool) if moves else pool


def with_migrations(scope: RunScope, pool: Sequence[Candidate]) -> list[Candidate]:
    """`pool` with each candidate's `migrated_to`, from the run's migration events."""
    seen: dict[str, set[int]] = defaultdict(set)
    for payload in scope.ledger.events(MIGRATION):
        seen[str(payload["agent_id"])].add(int(payload["to"]))
    return [c.model_copy(update={"migrated_to": tuple(sorted(seen.get(c.agent_id, ())))}) for c in pool]
