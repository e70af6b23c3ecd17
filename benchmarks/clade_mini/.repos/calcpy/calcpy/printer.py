"""Printer: syntax tree -> source text."""

from __future__ import annotations

from calcpy.parser import Binary, Call, Name, Negate, Node, Number

# How tightly each kind of node binds (see the grammar in README.md).
PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2, "//": 2, "%": 2, "^": 4}
NEGATE = 3
ATOM = 5


def to_source(node: Node) -> str:
    """Print a syntax tree as an expression that parses back to the same tree.

    Parentheses are written only where they are needed:
    to_source(parse("(1 + 2) * x")) == "(1 + 2) * x" and
    to_source(parse("1 + (2 * x)")) == "1 + 2 * x".
    """
    if isinstance(node, Number):
        return _number(node.value)
    if isinstance(node, Name):
        return node.name
    if isinstance(node, Call):
        return f"{node.function}({', '.join(to_source(arg) for arg in node.args)})"
    if isinstance(node, Negate):
        return "-" + _operand(node.operand, NEGATE)
    precedence = PRECEDENCE[node.op]
    left = _operand(node.left, precedence)
    right = _operand(node.right, precedence)
    return f"{left} {node.op} {right}"


def _operand(node: Node, minimum: int) -> str:
    """`node` as an operand that must bind at least as tightly as `minimum`."""
    text = to_source(node)
    return f"({text})" if _binding(node) < minimum else text


def _binding(node: Node) -> int:
    if isinstance(node, Binary):
        return PRECEDENCE[node.op]
    if isinstance(node, Negate):
        return NEGATE
    return ATOM


def _number(value: float) -> str:
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)
