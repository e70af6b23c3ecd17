import pytest
from verspec import Range, Version, max_satisfying


def test_exact_and_ordered_comparators() -> None:
    assert Range("1.2.3").contains("1.2.3")
    assert Range("=1.2.3").contains(Version(1, 2, 3))
    assert not Range("1.2.3").contains("1.2.4")
    within = Range(">=1.0.0 <2.0.0")
    assert within.contains("1.0.0") and within.contains("1.99.0")
    assert not within.contains("2.0.0") and not within.contains("0.9.0")


def test_alternatives() -> None:
    either = Range("<1.0.0 || >=3.0.0")
    assert either.contains("0.5.0") and either.contains("3.1.0")
    assert not either.contains("2.0.0")


def test_tilde() -> None:
    assert Range("~1.2.3").contains("1.2.9")
    assert not Range("~1.2.3").contains("1.3.0")
    assert not Range("~1.2.3").contains("1.2.2")


def test_caret_for_major_versions() -> None:
    assert Range("^1.2.3").contains("1.9.0")
    assert not Range("^1.2.3").contains("2.0.0")
    assert not Range("^1.2.3").contains("1.2.2")


def test_star() -> None:
    assert Range("*").contains("0.0.1")


def test_bad_ranges() -> None:
    for text in (">=", "^1.2", "1.0.0 ||", "!1.0.0"):
        with pytest.raises(ValueError):
            Range(text)


def test_max_satisfying() -> None:
    versions = ["1.2.0", "1.3.5", "2.0.0", "1.3.4"]
    assert max_satisfying(versions, ">=1.0.0 <2.0.0") == Version(1, 3, 5)
    assert max_satisfying(versions, Range("^1.2.0")) == Version(1, 3, 5)
    assert max_satisfying(versions, ">3.0.0") is None
