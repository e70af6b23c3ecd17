import pytest
from ledger import InsufficientStock, Inventory


def test_receive_and_on_hand() -> None:
    stock = Inventory()
    stock.receive("widget", 10, unit_cost=250)
    stock.receive("widget", 5, unit_cost=300)
    assert stock.on_hand("widget") == 15
    assert stock.on_hand("gadget") == 0


def test_valuation() -> None:
    stock = Inventory()
    stock.receive("widget", 10, unit_cost=250)
    stock.receive("gadget", 2, unit_cost=1000)
    assert stock.valuation() == 4500


def test_ship_from_a_single_lot() -> None:
    stock = Inventory()
    stock.receive("widget", 10, unit_cost=250)
    assert stock.ship("widget", 4) == 1000
    assert stock.on_hand("widget") == 6


def test_ship_everything() -> None:
    stock = Inventory()
    stock.receive("widget", 3, unit_cost=100)
    stock.receive("widget", 2, unit_cost=100)
    assert stock.ship("widget", 5) == 500
    assert stock.on_hand("widget") == 0


def test_ship_more_than_on_hand_raises() -> None:
    stock = Inventory()
    stock.receive("widget", 2, unit_cost=100)
    with pytest.raises(InsufficientStock):
        stock.ship("widget", 3)


def test_rejects_non_positive_quantities() -> None:
    stock = Inventory()
    with pytest.raises(ValueError):
        stock.receive("widget", 0, unit_cost=100)
    with pytest.raises(ValueError):
        stock.ship("widget", -1)
