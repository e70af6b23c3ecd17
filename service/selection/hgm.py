"""Huxley-Gödel Machine selection: Thompson sampling on each candidate's clade results.

Each candidate's chance of producing good descendants is modelled as
Beta(alpha + clade_resolved, beta + clade_attempted - clade_resolved), pooling
the evaluations of the agent and all its descendants. One draw samples every
candidate's Beta with the run's RNG and picks the largest sample.

With `above_seed`, only candidates that the lineage posterior (`contracts.lineage`) puts at or
above the run's seed are drawn from. With few tasks per child, most harmful edits are admitted.
Children built on them inherit the harm, and the archive drifts below the seed
(docs/simulation-results.md).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import ClassVar

from pydantic import Field

from contracts.family import Scored
from contracts.lineage import Estimate, lineage_estimates
from service.selection.base import Candidate, StrategyBase, check_k, checked
from service.selection.ledger import RunLedger
from service.selection.policy import RunScope
from service.selection.thompson import beta_max_probabilities

MIN_PRIOR = 1e-6
MAX_PRIOR = 1e6


class Hgm(StrategyBase):
    """Thompson sampling over clade results with a Beta(`alpha`, `beta`) prior (default 1, 1;
    each between MIN_PRIOR and MAX_PRIOR).

    `probabilities` gives each candidate's probability that its sample is the
    largest, which is exactly what one `select` draw picks from. It is computed
    by deterministic quadrature (see `thompson`), not Monte Carlo, so it is
    repeatable and costs no RNG state. Normalised Beta means are not used: they
    understate how strongly Thompson sampling favours the leader (9/10 against
    1/10 gives 0.83 by means, 0.9998 by sampling).
    """

    name: ClassVar[str] = "hgm"

    # The prior's bounds keep every draw finite and quick: random.betavariate never returns for a
    # parameter near 1e308, and the quadrature's variance underflows to 0 for one near 1e-300.
    alpha: float = Field(default=1.0, ge=MIN_PRIOR, le=MAX_PRIOR)
    beta: float = Field(default=1.0, ge=MIN_PRIOR, le=MAX_PRIOR)
    above_seed: bool = False

    def prepare_draw(self, scope: RunScope, pool: Sequence[Candidate], number: int) -> Sequence[Candidate]:
        if not self.above_seed:
            return pool
        estimates = lineage_of(scope.ledger)
        seed = estimates.get(scope.ledger.seed_agent_id)
        if seed is None:  # the seed has no result yet this epoch: nothing to compare with
            return pool
        kept = [c for c in pool if c.agent_id in estimates and estimates[c.agent_id].mean >= seed.mean]
        return kept or pool  # (the seed itself is kept whenever it is a candidate)

    def _posterior(self, c: Candidate) -> tuple[float, float]:
        return self.alpha + c.clade_resolved, self.beta + c.clade_attempted - c.clade_resolved

    def probabilities(self, candidates: Sequence[Candidate]) -> dict[str, float]:
        ordered = checked(candidates)
        chances = beta_max_probabilities([self._posterior(c) for c in ordered])
        return {c.agent_id: p for c, p in zip(ordered, chances, strict=True)}

    def select(self, candidates: Sequence[Candidate], rng: random.Random, k: int = 1) -> list[str]:
        check_k(k)
        ordered = checked(candidates)
        posteriors = [self._posterior(c) for c in ordered]
        chosen: list[str] = []
        for _ in range(k):
            samples = [rng.betavariate(a, b) for a, b in posteriors]
            winner = max(range(len(ordered)), key=samples.__getitem__)
            chosen.append(ordered[winner].agent_id)
        return chosen


def lineage_of(ledger: RunLedger) -> dict[str, Estimate]:
    """Each member's lineage posterior from its selection results of the current epoch (held-out
    results never reach a parent draw)."""
    tallies = ledger.tallies()
    return lineage_estimates(
        [
            Scored(m.agent_id, m.parent_id, tally.passes, tally.passes + tally.fails)
            for m in ledger.members()
            if (tally := tallies.get(m.agent_id)) is not None
        ]
    )
