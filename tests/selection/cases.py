"""Candidates shared by the selection tests."""

from __future__ import annotations

from service.selection import Candidate


def cand(
    agent_id: str,
    score: float = 0.0,
    children: int = 0,
    resolved: int = 0,
    attempted: int = 0,
) -> Candidate:
    return Candidate(
        agent_id=agent_id,
        score=score,
        children=children,
        clade_resolved=resolved,
        clade_attempted=attempted,
    )


# Varied enough that every strategy gives each a different, non-trivial chance.
MIXED = [
    cand("a", score=0.2, children=0, resolved=1, attempted=4),
    cand("b", score=0.5, children=1, resolved=3, attempted=6),
    cand("c", score=0.9, children=3, resolved=5, attempted=6),
    cand("d", score=0.0, children=0, resolved=0, attempted=0),
]
