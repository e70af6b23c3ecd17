import pytest
from ledger import format_cents, parse_amount


def test_format_cents() -> None:
    assert format_cents(123456) == "$1,234.56"
    assert format_cents(5) == "$0.05"
    assert format_cents(0) == "$0.00"


def test_format_cents_other_symbol() -> None:
    assert format_cents(1999, symbol="€") == "€19.99"


def test_parse_amount() -> None:
    assert parse_amount("$1,234.56") == 123456
    assert parse_amount("12") == 1200
    assert parse_amount("0.5") == 50
    assert parse_amount("-0.05") == -5


def test_parse_rejects_garbage() -> None:
    with pytest.raises(ValueError):
        parse_amount("twelve dollars")
