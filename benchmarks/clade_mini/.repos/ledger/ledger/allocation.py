"""Scaling and splitting amounts of money held as integer cents."""

from __future__ import annotations


def percent_of(cents: int, percent: int | float | str) -> int:
    """`percent` percent of `cents`, rounded to the nearest cent.

    Half a cent rounds away from zero, as on an invoice: 5% of $2.50 is 12.5
    cents, which is 13 cents. `percent` may be a string such as "7.25".
    """
    return round(cents * float(percent) / 100)


def split_evenly(cents: int, parts: int) -> list[int]:
    """Split an amount into `parts` shares that add up to it exactly.

    The shares differ by at most one cent and the larger ones come first: $1.00
    in three is [34, 33, 33]. A negative amount splits like the positive one,
    negated.
    """
    if parts < 1:
        raise ValueError("parts must be at least 1")
    return [cents // parts] * parts
