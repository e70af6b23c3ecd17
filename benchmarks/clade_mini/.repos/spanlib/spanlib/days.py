"""Business days: Monday to Friday, with optional holidays."""

from __future__ import annotations

from collections.abc import Collection
from datetime import date, timedelta

ONE_DAY = timedelta(days=1)


def is_business_day(day: date, holidays: Collection[date] = ()) -> bool:
    return day.weekday() < 5 and day not in holidays


def business_days_between(start: date, end: date, holidays: Collection[date] = ()) -> int:
    """Number of business days in [start, end); negative when `end` is before `start`."""
    if end < start:
        return -business_days_between(end, start, holidays)
    count = 0
    day = start
    while day < end:
        if is_business_day(day, holidays):
            count += 1
        day += ONE_DAY
    return count


def add_business_days(day: date, count: int, holidays: Collection[date] = ()) -> date:
    """The date `count` business days after `day` (before it when `count` is negative).

    Zero returns `day` itself, even on a weekend. Non-business days are skipped:
    add_business_days(friday, 1) is the following Monday.
    """
    for _ in range(count):
        day += ONE_DAY
        while not is_business_day(day, holidays):
            day += ONE_DAY
    return day
