from datetime import date

from spanlib import add_business_days, business_days_between, is_business_day

FRIDAY = date(2024, 3, 8)
SATURDAY = date(2024, 3, 9)
MONDAY = date(2024, 3, 11)


def test_weekends_are_not_business_days() -> None:
    assert is_business_day(FRIDAY)
    assert not is_business_day(SATURDAY)


def test_holidays_are_not_business_days() -> None:
    assert not is_business_day(MONDAY, holidays={MONDAY})


def test_business_days_between() -> None:
    assert business_days_between(FRIDAY, date(2024, 3, 15)) == 5
    assert business_days_between(date(2024, 3, 15), FRIDAY) == -5


def test_add_business_days_skips_the_weekend() -> None:
    assert add_business_days(FRIDAY, 1) == MONDAY
    assert add_business_days(FRIDAY, 5) == date(2024, 3, 15)


def test_add_business_days_skips_holidays() -> None:
    assert add_business_days(FRIDAY, 1, holidays={MONDAY}) == date(2024, 3, 12)


def test_add_zero_business_days() -> None:
    assert add_business_days(SATURDAY, 0) == SATURDAY
