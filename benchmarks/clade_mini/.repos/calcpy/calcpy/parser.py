"""Recursive-descent parser: tokens -> syntax tree (see the grammar in README.md)."""

from __future__ import annotations

from dataclasses import dataclass

from calcpy.errors import ParseError
from calcpy.tokens import Token, tokenize


@dataclass(frozen=True)
class Number:
    value: float


@dataclass(frozen=True)
class Name:
    name: str


@dataclass(frozen=True)
class Negate:
    operand: Node


@dataclass(frozen=True)
class Binary:
    op: str
    left: Node
    right: Node


@dataclass(frozen=True)
class Call:
    function: str
    args: tuple[Node, ...]


Node = Number | Name | Negate | Binary | Call


class _Parser:
    def __init__(self, tokens: list[Token]):
        self.tokens = tokens
        self.index = 0

    @property
    def current(self) -> Token:
        return self.tokens[self.index]

    def accept(self, *ops: str) -> str | None:
        token = self.current
        if token.kind == "op" and token.text in ops:
            self.index += 1
            return token.text
        return None

    def expect(self, op: str) -> None:
        if self.accept(op) is None:
            raise ParseError(f"expected {op!r} at position {self.current.position}")

    def expr(self) -> Node:
        left = self.term()
        op = self.accept("+", "-")
        if op is not None:
            return Binary(op, left, self.expr())
        return left

    def term(self) -> Node:
        left = self.unary()
        op = self.accept("*", "/", "%")
        if op is not None:
            return Binary(op, left, self.term())
        return left

    def unary(self) -> Node:
        if self.accept("-"):
            return Negate(self.unary())
        return self.power()

    def power(self) -> Node:
        base = self.atom()
        if self.accept("^"):
            return Binary("^", base, self.unary())
        return base

    def atom(self) -> Node:
        token = self.current
        if token.kind == "number":
            self.index += 1
            return Number(float(token.text))
        if token.kind == "name":
            self.index += 1
            if self.accept("("):
                args = [self.expr()]
                while self.accept(","):
                    args.append(self.expr())
                self.expect(")")
                return Call(token.text, tuple(args))
            return Name(token.text)
        if self.accept("("):
            inner = self.expr()
            self.expect(")")
            return inner
        found = token.text or "end of input"
        raise ParseError(f"unexpected {found!r} at position {token.position}")


def parse(source: str) -> Node:
    parser = _Parser(tokenize(source))
    tree = parser.expr()
    if parser.current.kind != "end":
        token = parser.current
        raise ParseError(f"unexpected {token.text!r} at position {token.position}")
    return tree
