"""MAP-Elites: an archive of niches keyed by what an agent solves, each kept by its elite.

An agent's behaviour descriptor says which groups of tasks it solves. The first stage's tasks
are sorted by id and cut into `bins` consecutive clusters of near-equal size (the first ones
one task larger when they do not divide evenly; never more clusters than tasks). In each
cluster the agent's solved fraction (per task resolved / attempted, a task not attempted
counting 0, averaged over the cluster) is binned into `levels` equal-width levels,
`min(levels - 1, floor(fraction * levels))`, and the descriptor is the levels joined by "-"
("2-0-1": the first cluster mostly solved, the second not at all). It is stored as the
agent's `niche` in the run after the agent is admitted (the `after_admission` hook).

Each niche's elite is its best agent: highest score, then fewest children, then lowest id.
Parents are drawn uniformly among the elites, so every behaviour found keeps being explored
however rare it is; agents that are not an elite are never drawn. Candidates whose niche is
unknown share one niche.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import ClassVar

from pydantic import Field

from contracts.vocabulary import EvaluationPurpose
from service.selection.base import Candidate, StrategyBase, checked
from service.selection.policy import RunScope


class MapElites(StrategyBase):
    """Uniform among niche elites; descriptors over `bins` task clusters at `levels` levels."""

    name: ClassVar[str] = "map_elites"

    bins: int = Field(default=3, ge=1, le=32)
    levels: int = Field(default=2, ge=2, le=100)

    def clusters(self, tasks: Sequence[str]) -> list[list[str]]:
        """The tasks sorted by id, cut into at most `bins` consecutive clusters."""
        ordered = sorted(set(tasks))
        count = min(self.bins, len(ordered))
        size, extra = divmod(len(ordered), count) if count else (0, 0)
        out: list[list[str]] = []
        start = 0
        for index in range(count):
            end = start + size + (1 if index < extra else 0)
            out.append(ordered[start:end])
            start = end
        return out

    def descriptor(self, tasks: Sequence[str], results: Mapping[str, tuple[int, int]]) -> str:
        """The niche of an agent with `results[task] = (resolved, attempted)` on `tasks`."""
        levels: list[str] = []
        for cluster in self.clusters(tasks):
            # Exact fractions: a fraction on a level's edge must not fall below it by rounding.
            solved = sum((_fraction(results.get(t, (0, 0))) for t in cluster), Fraction(0)) / len(cluster)
            levels.append(str(min(self.levels - 1, int(solved * self.levels))))
        return "-".join(levels)

    def elites(self, candidates: Sequence[Candidate]) -> dict[str | None, Candidate]:
        """Each niche's best candidate."""
        best: dict[str | None, Candidate] = {}
        for c in checked(candidates):
            held = best.get(c.niche)
            if held is None or (-c.score, c.children, c.agent_id) < (
                -held.score,
                held.children,
                held.agent_id,
            ):
                best[c.niche] = c
        return best

    def probabilities(self, candidates: Sequence[Candidate]) -> dict[str, float]:
        elites = {c.agent_id for c in self.elites(candidates).values()}
        return {c.agent_id: 1.0 / len(elites) if c.agent_id in elites else 0.0 for c in checked(candidates)}

    def after_admission(self, scope: RunScope) -> None:
        """The niche of each admitted agent that lacks one, from its first-stage results."""
        ledger = scope.ledger
        members = [m.agent_id for m in ledger.members() if m.admitted and m.niche is None]
        if not members:
            return
        tasks = scope.plan.stages[0].task_ids
        staged = set(tasks)
        results: dict[str, dict[str, tuple[int, int]]] = defaultdict(dict)
        for e in ledger.evaluations(members):
            if e.done and e.purpose == EvaluationPurpose.SELECTION and e.task_id in staged:
                resolved, attempted = results[e.agent_id].get(e.task_id, (0, 0))
                results[e.agent_id][e.task_id] = (resolved + (1 if e.resolved else 0), attempted + 1)
        for agent_id in members:
            ledger.set_niche(agent_id, self.descriptor(tasks, results[agent_id]))


def _fraction(result: tuple[int, int]) -> Fraction:
    resolved, attempted = result
    return Fraction(resolved, attempted) if attempted else Fraction(0)


def _rank(c: Candidate) -> tuple[float, int, str]:
    return (-c.score, c.children, c.agent_id)
