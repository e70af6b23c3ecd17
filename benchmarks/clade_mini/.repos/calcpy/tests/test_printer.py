from calcpy import parse, to_source
from calcpy.parser import Binary, Name


def test_prints_numbers_names_and_calls() -> None:
    assert to_source(parse("2.5 * x")) == "2.5 * x"
    assert to_source(parse("max(1, y, 3)")) == "max(1, y, 3)"


def test_keeps_parentheses_that_change_the_meaning() -> None:
    assert to_source(parse("(1 + 2) * 3")) == "(1 + 2) * 3"
    assert to_source(parse("-(a + b)")) == "-(a + b)"


def test_drops_parentheses_that_do_not() -> None:
    assert to_source(parse("1 + (2 * 3)")) == "1 + 2 * 3"
    assert to_source(parse("((x))")) == "x"
    assert to_source(parse("a - -b")) == "a - -b"


def test_power() -> None:
    assert to_source(parse("2 ^ 3 ^ 2")) == "2 ^ 3 ^ 2"
    assert to_source(parse("-2 ^ 2")) == "-2 ^ 2"


def test_left_nested_operators() -> None:
    a, b, c = Name("a"), Name("b"), Name("c")
    assert to_source(Binary("-", Binary("-", a, b), c)) == "a - b - c"
    assert to_source(Binary("*", Binary("/", a, b), c)) == "a / b * c"
