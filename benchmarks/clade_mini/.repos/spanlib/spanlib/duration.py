"""Durations written the short way: "1h30m", "2d 4h", "45s"."""

from __future__ import annotations

import re

UNITS = {"d": 86_400, "h": 3_600, "m": 60, "s": 1}
_PART = re.compile(r"(\d+)\s*([dhms])")


def parse_duration(text: str) -> int:
    """The number of seconds in a duration such as "1h30m", "2d 4h" or "90s".

    A duration is one or more parts, each a whole number followed by a unit
    (d, h, m or s), optionally separated by spaces. Anything else, such as an
    empty string, a number without a unit or an unknown unit, is a ValueError.
    """
    return sum(int(amount) * UNITS[unit] for amount, unit in _PART.findall(text))


def format_duration(seconds: int) -> str:
    """The short form of a number of seconds, largest unit first: 5400 -> "1h 30m"."""
    if seconds < 0:
        raise ValueError("a duration cannot be negative")
    if seconds == 0:
        return "0s"
    parts: list[str] = []
    for unit, size in UNITS.items():
        amount, seconds = divmod(seconds, size)
        if amount:
            parts.append(f"{amount}{unit}")
    return " ".join(parts)
