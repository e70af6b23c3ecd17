"""ledger: FIFO inventory and money helpers (amounts are integer cents)."""

from ledger.allocation import percent_of, split_evenly
from ledger.inventory import InsufficientStock, Inventory, Lot
from ledger.money import format_cents, parse_amount

__all__ = [
    "InsufficientStock",
    "Inventory",
    "Lot",
    "format_cents",
    "parse_amount",
    "percent_of",
    "split_evenly",
]
