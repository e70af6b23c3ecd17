"""Tokenizer: source text -> list of tokens."""

from __future__ import annotations

import re
from dataclasses import dataclass

from calcpy.errors import ParseError

OPERATORS = "+-*/%^(),"
_NUMBER = re.compile(r"\d+\.?\d*|\.\d+")
_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


@dataclass(frozen=True)
class Token:
    kind: str  # "number", "name", "op" or "end"
    text: str
    position: int


def tokenize(source: str) -> list[Token]:
    tokens: list[Token] = []
    position = 0
    while position < len(source):
        char = source[position]
        if char.isspace():
            position += 1
            continue
        if char in OPERATORS:
            tokens.append(Token("op", char, position))
            position += 1
            continue
        for kind, pattern in (("number", _NUMBER), ("name", _NAME)):
            match = pattern.match(source, position)
            if match:
                tokens.append(Token(kind, match.group(), position))
                position = match.end()
                break
        else:
            raise ParseError(f"unexpected character {char!r} at position {position}")
    tokens.append(Token("end", "", len(source)))
    return tokens
