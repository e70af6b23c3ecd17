import pytest
from spanlib import format_duration, parse_duration


def test_parse_single_units() -> None:
    assert parse_duration("45s") == 45
    assert parse_duration("10m") == 600
    assert parse_duration("2h") == 7200
    assert parse_duration("1d") == 86400


def test_parse_several_parts() -> None:
    assert parse_duration("1h30m") == 5400
    assert parse_duration("2d 4h") == 187200
    assert parse_duration("1h 1m 1s") == 3661


def test_format_duration() -> None:
    assert format_duration(5400) == "1h 30m"
    assert format_duration(90061) == "1d 1h 1m 1s"
    assert format_duration(0) == "0s"


def test_format_rejects_negative_durations() -> None:
    with pytest.raises(ValueError):
        format_duration(-1)


def test_round_trip() -> None:
    for seconds in (1, 59, 61, 3600, 86399, 172800):
        assert parse_duration(format_duration(seconds)) == seconds
