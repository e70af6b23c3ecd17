"""ledger: FIFO inventory and money helpers (amounts are integer cents)."""

from ledger.inventory import InsufficientStock, Inventory, Lot
from ledger.money import format_cents, parse_amount

__all__ = ["InsufficientStock", "Inventory", "Lot", "format_cents", "parse_amount"]
