import pytest
from calcpy import CalcError, EvalError, ParseError, evaluate, tokenize


def test_numbers_and_precedence() -> None:
    assert evaluate("1 + 2 * 3") == 7
    assert evaluate("(1 + 2) * 3") == 9
    assert evaluate("3.5") == 3.5
    assert evaluate(".5 + 1") == 1.5


def test_single_subtraction_and_division() -> None:
    assert evaluate("10 - 4") == 6
    assert evaluate("9 / 3") == 3


def test_power_is_right_associative_and_binds_tighter_than_minus() -> None:
    assert evaluate("2 ^ 3 ^ 2") == 512
    assert evaluate("-2 ^ 2") == -4


def test_variables() -> None:
    assert evaluate("2 * (3 + x)", {"x": 4}) == 14


def test_functions() -> None:
    assert evaluate("max(1, 5, 3)") == 5
    assert evaluate("sqrt(16) + abs(-2)") == 6


def test_unknown_variable_is_an_eval_error() -> None:
    with pytest.raises(EvalError, match="unknown variable 'y'"):
        evaluate("y + 1")


def test_math_domain_error_is_an_eval_error() -> None:
    with pytest.raises(EvalError):
        evaluate("sqrt(-1)")


def test_syntax_errors() -> None:
    with pytest.raises(ParseError):
        evaluate("1 +")
    with pytest.raises(ParseError):
        evaluate("2 $ 3")


def test_all_errors_share_a_base_class() -> None:
    assert issubclass(ParseError, CalcError)
    assert issubclass(EvalError, CalcError)


def test_tokenize() -> None:
    kinds = [token.kind for token in tokenize("f(x) + 1")]
    assert kinds == ["name", "op", "name", "op", "op", "number", "end"]
