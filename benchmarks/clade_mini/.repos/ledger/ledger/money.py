"""Money as integer cents: parsing and formatting."""

import re

_AMOUNT = re.compile(r"^(-)?\$?(\d{1,3}(?:,\d{3})*|\d+)(?:\.(\d{1,2}))?$")


def parse_amount(text: str) -> int:
    """Parse "$1,234.5", "12", "-0.05" and the like into cents."""
    match = _AMOUNT.match(text.strip())
    if match is None:
        raise ValueError(f"not an amount of money: {text!r}")
    sign, whole, fraction = match.groups()
    cents = int(whole.replace(",", "")) * 100 + int((fraction or "0").ljust(2, "0"))
    return -cents if sign else cents


def format_cents(cents: int, symbol: str = "$") -> str:
    """Format cents for people: 123456 -> "$1,234.56", -5 -> "-$0.05"."""
    dollars, rest = divmod(cents, 100)
    return f"{symbol}{dollars:,}.{rest:02d}"
