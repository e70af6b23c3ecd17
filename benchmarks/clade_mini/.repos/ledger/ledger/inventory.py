"""Stock kept in purchase lots, costed first-in-first-out."""

from __future__ import annotations

from dataclasses import dataclass, field


class InsufficientStock(Exception):
    """A shipment asked for more units than are on hand."""


@dataclass
class Lot:
    """Units bought together at one unit cost (in cents)."""

    quantity: int
    unit_cost: int


@dataclass
class Inventory:
    lots: dict[str, list[Lot]] = field(default_factory=dict)

    def receive(self, sku: str, quantity: int, unit_cost: int) -> None:
        """Add a purchase lot; later lots are consumed after earlier ones."""
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        if unit_cost < 0:
            raise ValueError("unit cost cannot be negative")
        self.lots.setdefault(sku, []).append(Lot(quantity, unit_cost))

    def on_hand(self, sku: str) -> int:
        return sum(lot.quantity for lot in self.lots.get(sku, []))

    def valuation(self) -> int:
        """Total cost of all stock on hand, in cents."""
        return sum(lot.quantity * lot.unit_cost for lots in self.lots.values() for lot in lots)

    def ship(self, sku: str, quantity: int) -> int:
        """Remove `quantity` units, oldest lots first; return their total cost in cents.

        Raises InsufficientStock, and changes nothing, when fewer units are on hand.
        """
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        lots = self.lots.get(sku, [])
        cost = 0
        remaining = quantity
        while remaining > 0:
            if not lots:
                raise InsufficientStock(f"{sku}: asked for {quantity}, short by {remaining}")
            lot = lots[-1]
            taken = min(lot.quantity, remaining)
            cost += taken * lot.unit_cost
            lot.quantity -= taken
            remaining -= taken
            if lot.quantity == 0:
                lots.pop()
        return cost
