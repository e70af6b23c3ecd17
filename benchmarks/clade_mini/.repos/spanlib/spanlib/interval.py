"""Half-open intervals [start, end) on a number line."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Interval:
    """The half-open interval [start, end): `start` is inside it, `end` is not."""

    start: float
    end: float

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise ValueError(f"interval ends before it starts: [{self.start}, {self.end})")

    @property
    def length(self) -> float:
        return self.end - self.start

    @property
    def is_empty(self) -> bool:
        return self.start == self.end

    def contains(self, point: float) -> bool:
        return self.start <= point < self.end

    def overlaps(self, other: Interval) -> bool:
        """True when the two intervals share at least one point."""
        return self.start <= other.end and other.start <= self.end

    def intersection(self, other: Interval) -> Interval | None:
        """The common part of both intervals, or None when they do not overlap."""
        start, end = max(self.start, other.start), min(self.end, other.end)
        if start < end:
            return Interval(start, end)
        return None


def merge(intervals: Iterable[Interval]) -> list[Interval]:
    """Merge overlapping or touching intervals; the result is sorted and disjoint.

    Empty intervals are dropped. The input may be in any order.
    """
    merged: list[Interval] = []
    for interval in intervals:
        if interval.is_empty:
            continue
        if merged and interval.start <= merged[-1].end:
            last = merged.pop()
            merged.append(Interval(last.start, max(last.end, interval.end)))
        else:
            merged.append(interval)
    return merged


def total_length(intervals: Iterable[Interval]) -> float:
    """Length of the union of the intervals: overlapping parts count once."""
    return sum(interval.length for interval in merge(intervals))
