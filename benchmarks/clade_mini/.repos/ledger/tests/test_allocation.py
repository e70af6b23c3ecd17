import pytest
from ledger import percent_of, split_evenly


def test_percent_of_whole_results() -> None:
    assert percent_of(1000, 15) == 150
    assert percent_of(999, 0) == 0
    assert percent_of(200, "12.5") == 25


def test_percent_of_rounds_to_the_nearest_cent() -> None:
    assert percent_of(1234, 10) == 123
    assert percent_of(1299, 10) == 130


def test_split_evenly_without_remainder() -> None:
    assert split_evenly(90, 3) == [30, 30, 30]
    assert split_evenly(5, 1) == [5]
    assert split_evenly(0, 2) == [0, 0]


def test_split_evenly_needs_a_part() -> None:
    with pytest.raises(ValueError):
        split_evenly(100, 0)
