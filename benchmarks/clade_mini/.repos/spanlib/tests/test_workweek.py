from datetime import date

import pytest
from spanlib import WorkWeek

THURSDAY = date(2024, 3, 7)
FRIDAY = date(2024, 3, 8)
SATURDAY = date(2024, 3, 9)
MONDAY = date(2024, 3, 11)


def test_default_work_week() -> None:
    week = WorkWeek()
    assert week.is_business_day(FRIDAY)
    assert not week.is_business_day(SATURDAY)
    assert week.add(FRIDAY, 1) == MONDAY
    assert week.between(FRIDAY, MONDAY) == 1


def test_holidays() -> None:
    week = WorkWeek(holidays=[MONDAY])
    assert not week.is_business_day(MONDAY)
    assert week.add(FRIDAY, 1) == date(2024, 3, 12)


def test_rejects_bad_weekends() -> None:
    with pytest.raises(ValueError):
        WorkWeek(weekend={7})
    with pytest.raises(ValueError):
        WorkWeek(weekend=range(7))
