import pytest
from spanlib import Interval, merge, total_length


def test_length_and_contains() -> None:
    interval = Interval(2, 5)
    assert interval.length == 3
    assert interval.contains(2)
    assert not interval.contains(5)


def test_rejects_reversed_bounds() -> None:
    with pytest.raises(ValueError):
        Interval(5, 2)


def test_overlapping_intervals() -> None:
    assert Interval(1, 4).overlaps(Interval(3, 6))
    assert Interval(3, 6).overlaps(Interval(1, 4))
    assert Interval(1, 10).overlaps(Interval(4, 5))


def test_far_apart_intervals_do_not_overlap() -> None:
    assert not Interval(1, 2).overlaps(Interval(5, 6))


def test_intersection() -> None:
    assert Interval(1, 4).intersection(Interval(3, 6)) == Interval(3, 4)
    assert Interval(1, 2).intersection(Interval(3, 4)) is None


def test_merge_sorted_input() -> None:
    merged = merge([Interval(1, 3), Interval(2, 5), Interval(7, 8)])
    assert merged == [Interval(1, 5), Interval(7, 8)]


def test_merge_touching_intervals() -> None:
    assert merge([Interval(1, 3), Interval(3, 4)]) == [Interval(1, 4)]


def test_merge_drops_empty_intervals() -> None:
    assert merge([Interval(1, 1), Interval(2, 3)]) == [Interval(2, 3)]


def test_total_length_counts_overlap_once() -> None:
    assert total_length([Interval(0, 4), Interval(2, 6)]) == 6
