"""Evaluator: syntax tree -> float."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from calcpy.errors import EvalError
from calcpy.parser import Binary, Name, Negate, Node, Number, parse

FUNCTIONS: dict[str, Callable[..., float]] = {
    "abs": abs,
    "max": max,
    "min": min,
    "sqrt": math.sqrt,
}


def _binary(op: str, left: float, right: float) -> float:
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if op == "/":
        return left / right
    if op == "%":
        return left % right
    return float(left**right)


def _eval(node: Node, variables: Mapping[str, float]) -> float:
    if isinstance(node, Number):
        return node.value
    if isinstance(node, Name):
        if node.name not in variables:
            raise EvalError(f"unknown variable {node.name!r}")
        return float(variables[node.name])
    if isinstance(node, Negate):
        return -_eval(node.operand, variables)
    if isinstance(node, Binary):
        return _binary(node.op, _eval(node.left, variables), _eval(node.right, variables))
    function = FUNCTIONS.get(node.function)
    if function is None:
        raise EvalError(f"unknown function {node.function!r}")
    args = [_eval(arg, variables) for arg in node.args]
    try:
        return float(function(*args))
    except (TypeError, ValueError) as exc:
        raise EvalError(f"{node.function}: {exc}") from exc


def evaluate(source: str, variables: Mapping[str, float] | None = None) -> float:
    """Evaluate an expression; every failure is a CalcError (ParseError or EvalError)."""
    return _eval(parse(source), variables or {})
