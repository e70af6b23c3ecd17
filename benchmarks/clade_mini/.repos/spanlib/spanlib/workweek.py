"""Work weeks other than Monday to Friday, e.g. Sunday to Thursday."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import date

from spanlib.days import add_business_days, business_days_between, is_business_day

MONDAY, TUESDAY, WEDNESDAY, THURSDAY, FRIDAY, SATURDAY, SUNDAY = range(7)


@dataclass(frozen=True)
class WorkWeek:
    """A business calendar: the weekdays that make up the weekend, and holidays.

    Weekdays are numbered as in `date.weekday()`: 0 is Monday, 6 is Sunday.
    The default is the Saturday-Sunday weekend of the functions in `spanlib.days`.
    """

    weekend: frozenset[int] = frozenset({SATURDAY, SUNDAY})
    holidays: frozenset[date] = frozenset()

    def __init__(self, weekend: Collection[int] = (SATURDAY, SUNDAY), holidays: Collection[date] = ()):
        weekend = frozenset(weekend)
        if not weekend <= set(range(7)):
            raise ValueError(f"weekdays are 0 (Monday) to 6 (Sunday), got {sorted(weekend)}")
        if len(weekend) == 7:
            raise ValueError("a week needs at least one business day")
        object.__setattr__(self, "weekend", weekend)
        object.__setattr__(self, "holidays", frozenset(holidays))

    def is_business_day(self, day: date) -> bool:
        return is_business_day(day, self.holidays)

    def between(self, start: date, end: date) -> int:
        """Number of business days in [start, end); negative when `end` is before `start`."""
        return business_days_between(start, end, self.holidays)

    def add(self, day: date, count: int) -> date:
        """The date `count` business days after `day` (see `add_business_days`)."""
        return add_business_days(day, count, self.holidays)
