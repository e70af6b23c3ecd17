"""Choosing the agents a held-out phase scores by their family's selection results.

With few selection tasks per agent, the best own scores are mostly the luckiest. A child is its
parent's code plus one edit, and most edits change little, so a child's results are weak
evidence about its parent and the other way round. An agent's family estimate pools its own
resolved and attempted counts with its parent's and its children's at `NEIGHBOUR_WEIGHT`:

    (r_self + w * sum(r_neighbour)) / (n_self + w * sum(n_neighbour))

Neighbours are the members of the same run with a selection score (a crossover child counts
its first parent only). An agent alone (no scored parent or child in the run) keeps its own
score.
"""

from __future__ import annotations

from dataclasses import dataclass

# Half weight: a neighbour's code differs by one edit (it may be a harmful one), so its task is
# worth less than one of the agent's own.
NEIGHBOUR_WEIGHT = 0.5


@dataclass(frozen=True)
class Scored:
    agent_id: str
    parent_id: str | None
    resolved: int
    attempted: int


def family_estimates(members: list[Scored], weight: float = NEIGHBOUR_WEIGHT) -> dict[str, float]:
    """Each member's pooled resolved fraction (members with no attempt are left out)."""
    scored = {m.agent_id: m for m in members if m.attempted > 0}
    children: dict[str, list[Scored]] = {}
    for member in scored.values():
        if member.parent_id in scored:
            children.setdefault(member.parent_id, []).append(member)
    estimates = {}
    for member in scored.values():
        neighbours = list(children.get(member.agent_id, []))
        if member.parent_id in scored:
            neighbours.append(scored[member.parent_id])
        resolved = member.resolved + weight * sum(n.resolved for n in neighbours)
        attempted = member.attempted + weight * sum(n.attempted for n in neighbours)
        estimates[member.agent_id] = resolved / attempted
    return estimates
