import pytest
from textkit import truncate, wrap


def test_wrap_greedy() -> None:
    assert wrap("a few words to wrap", 8) == ["a few", "words to", "wrap"]


def test_wrap_blank_text() -> None:
    assert wrap("   ", 10) == []


def test_wrap_exact_fit() -> None:
    assert wrap("abc def", 7) == ["abc def"]


def test_wrap_rejects_zero_width() -> None:
    with pytest.raises(ValueError):
        wrap("text", 0)


def test_truncate_short_text_is_unchanged() -> None:
    assert truncate("short", 10) == "short"


def test_truncate_exact_length_is_unchanged() -> None:
    assert truncate("0123456789", 10) == "0123456789"


def test_truncate_ends_with_placeholder() -> None:
    assert truncate("The quick brown fox jumps", 15).endswith("…")
