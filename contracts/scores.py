"""An agent's score counts in a run: the one shape the API's answers and an export's
`metadata.json` share, and the one place they are computed from the stored counts."""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel

from contracts.intervals import simultaneous_z, wilson


class Counted(Protocol):
    """What the counts are computed from: an agent's membership of a run, as stored."""

    @property
    def resolved(self) -> int | None: ...

    @property
    def attempted(self) -> int | None: ...

    @property
    def heldout_resolved(self) -> int | None: ...

    @property
    def heldout_total(self) -> int | None: ...

    @property
    def heldout_compared(self) -> int | None: ...

    @property
    def same_as(self) -> str | None: ...


class RawScoreCounts(BaseModel):
    """The counts as stored: the selection evaluations behind the score, the held-out result."""

    resolved: int | None = None
    attempted: int | None = None
    heldout_resolved: int | None = None  # the end-of-run re-evaluation on held-out tasks
    heldout_total: int | None = None
    # How many of the run's agents have a held-out score, this one included: the pick compares
    # them all, so its held-out interval holds for all of them at once (None: 1).
    heldout_compared: int | None = None
    same_as: str | None = None  # an agent with the same code, whose results it reused


class ScoreCounts(RawScoreCounts):
    """The counts with their 95% Wilson intervals (None where nothing was counted); the held-out
    interval holds for every agent it was compared with at once (`heldout_interval`)."""

    score_low: float | None = None
    score_high: float | None = None
    heldout_low: float | None = None
    heldout_high: float | None = None

    @classmethod
    def of(cls, member: Counted) -> ScoreCounts:
        """The one builder: every answer and export that shows an agent's counts uses it."""
        score_low, score_high = interval(member.resolved, member.attempted)
        heldout_low, heldout_high = heldout_interval(member)
        return cls(
            resolved=member.resolved,
            attempted=member.attempted,
            heldout_resolved=member.heldout_resolved,
            heldout_total=member.heldout_total,
            heldout_compared=member.heldout_compared,
            same_as=member.same_as,
            score_low=score_low,
            score_high=score_high,
            heldout_low=heldout_low,
            heldout_high=heldout_high,
        )


def fraction(resolved: int | None, total: int | None) -> float | None:
    """resolved / total, or None where nothing was counted."""
    return resolved / total if resolved is not None and total else None


def interval(
    resolved: int | None, total: int | None, *, compared: int | None = None
) -> tuple[float | None, float | None]:
    """The 95% Wilson interval of resolved / total, or (None, None) where nothing was counted;
    with `compared` > 1, wide enough to hold for that many agents at once (`simultaneous_z`)."""
    if resolved is None or not total:
        return None, None
    return wilson(resolved, total, simultaneous_z(compared or 1))


def heldout_interval(member: Counted) -> tuple[float | None, float | None]:
    """The member's held-out interval: it holds for every agent its held-out phase compared."""
    return interval(member.heldout_resolved, member.heldout_total, compared=member.heldout_compared)
