"""Tokens of Go, Rust, Java, JavaScript and C++ source, enough to find tests and their literals.

Strings (raw, template, text blocks), character literals and comments are single tokens,
so that a brace or a quote inside them never counts as code. Numbers keep their suffixes
and separators (`999_999`, `5u64`, `1'000`); Rust lifetimes are not character literals;
a JavaScript `/` starts a regular expression where an operand is expected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Kind = Literal["ident", "number", "string", "char", "punct", "comment"]  # comments are dropped
Flavor = Literal["go", "rust", "java", "javascript", "cpp"]


@dataclass(frozen=True)
class Token:
    kind: Kind
    start: int
    end: int
    text: str
    newline_before: bool = False  # a line break between this token and the one before


class LexError(ValueError):
    """The source does not tokenize (an unterminated string or comment)."""


_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_NUMBER = re.compile(r"0[xXbBoO][0-9a-fA-F_']+\w*|(?:\d[\d_']*)?\.?\d[\d_']*(?:[eE][+-]?\d+)?\w*")
_CPP_RAW = re.compile(r'(?:u8|u|U|L)?R"([^()\\\s]{0,16})\(')
_RUST_RAW = re.compile(r'b?r(#*)"')
_PUNCT3 = ("...", ">>=", "<<=", "===", "!==", "::=")
_PUNCT2 = ("::", "->", "=>", "==", "!=", "<=", ">=", "&&", "||", "++", "--", ":=", "+=", "-=", "<<", ">>")
# After these, a JavaScript `/` starts a regular expression literal (an operand is expected).
_REGEX_AFTER = frozenset("(,=:[!&|?{};+-*%<>~^") | {"return", "typeof", "case", "=>", "==", "===", "!="}


def tokenize(text: str, flavor: Flavor) -> list[Token]:
    tokens: list[Token] = []
    i, n = 0, len(text)
    newline = False
    while i < n:
        c = text[i]
        if c.isspace():
            newline = newline or c == "\n"
            i += 1
            continue
        start = i
        kind: Kind
        if text.startswith("//", i):
            end = text.find("\n", i)
            i, kind = (n if end < 0 else end), "comment"
        elif text.startswith("/*", i):
            i, kind = _block_comment(text, i, nested=flavor == "rust"), "comment"
        elif flavor == "cpp" and (raw := _CPP_RAW.match(text, i)):
            close = text.find(f'){raw.group(1)}"', raw.end())
            if close < 0:
                raise LexError(f"unterminated raw string at offset {i}")
            i, kind = close + len(raw.group(1)) + 2, "string"
        elif flavor == "rust" and (raw := _RUST_RAW.match(text, i)) and (raw.group(1) or text[i] != "b"):
            close = text.find('"' + raw.group(1), raw.end())
            if close < 0:
                raise LexError(f"unterminated raw string at offset {i}")
            i, kind = close + 1 + len(raw.group(1)), "string"
        elif flavor == "rust" and text.startswith('b"', i):
            i, kind = _quoted(text, i + 1, '"'), "string"
        elif flavor == "java" and text.startswith('"""', i):
            close = text.find('"""', i + 3)
            if close < 0:
                raise LexError(f"unterminated text block at offset {i}")
            i, kind = close + 3, "string"
        elif c == '"':
            i, kind = _quoted(text, i, '"'), "string"
        elif c == "`" and flavor == "go":
            close = text.find("`", i + 1)
            if close < 0:
                raise LexError(f"unterminated raw string at offset {i}")
            i, kind = close + 1, "string"
        elif c == "`" and flavor == "javascript":
            i, kind = _template(text, i), "string"
        elif c == "'" and flavor == "javascript":
            i, kind = _quoted(text, i, "'"), "string"
        elif c == "'":
            literal_end = _char_literal(text, i, flavor)
            if literal_end is None:  # a Rust lifetime or label: `'a`
                i, kind = i + 1, "punct"
            else:
                i, kind = literal_end, "char"
        elif c == "/" and flavor == "javascript" and _regex_allowed(tokens):
            i, kind = _regex(text, i), "string"
        elif c.isdigit() or (c == "." and i + 1 < n and text[i + 1].isdigit()):
            match = _NUMBER.match(text, i)
            assert match is not None
            i, kind = match.end(), "number"
            if flavor != "cpp" and "'" in match.group():  # only C++ has digit separators
                i = start + match.group().index("'")
        elif match := _IDENT.match(text, i):
            i, kind = match.end(), "ident"
        else:
            three, two = text[i : i + 3], text[i : i + 2]
            i += 3 if three in _PUNCT3 else 2 if two in _PUNCT2 else 1
            kind = "punct"
        if kind == "comment":
            newline = newline or text[start:i].endswith("\n") or "\n" in text[start:i]
            continue
        tokens.append(Token(kind, start, i, text[start:i], newline))
        newline = False
    return tokens


def _block_comment(text: str, i: int, *, nested: bool) -> int:
    depth, j = 0, i
    while j < len(text):
        if text.startswith("/*", j):
            depth = depth + 1 if nested or depth == 0 else depth
            j += 2
        elif text.startswith("*/", j):
            depth -= 1
            j += 2
            if depth == 0:
                return j
        else:
            j += 1
    raise LexError(f"unterminated comment at offset {i}")


def _quoted(text: str, i: int, quote: str) -> int:
    j = i + 1
    while j < len(text):
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == quote:
            return j + 1
        if c == "\n" and quote == "'":
            break
        j += 1
    raise LexError(f"unterminated string at offset {i}")


def _template(text: str, i: int) -> int:
    j = i + 1
    while j < len(text):
        c = text[j]
        if c == "\\":
            j += 2
        elif c == "`":
            return j + 1
        elif text.startswith("${", j):
            depth, j = 1, j + 2
            while j < len(text) and depth:
                if text[j] in "'\"`":
                    j = _template(text, j) if text[j] == "`" else _quoted(text, j, text[j])
                    continue
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                j += 1
        else:
            j += 1
    raise LexError(f"unterminated template literal at offset {i}")


def _char_literal(text: str, i: int, flavor: Flavor) -> int | None:
    if text.startswith("\\", i + 1):
        close = text.find("'", i + 2 if text[i + 2 : i + 3] != "'" else i + 3)
        return None if close < 0 or close - i > 12 else close + 1
    if i + 2 < len(text) and text[i + 2] == "'":
        return i + 3
    if flavor == "rust":
        return None  # a lifetime
    # A multi-byte character (one code point in Python's string) is covered above.
    raise LexError(f"unterminated character literal at offset {i}")


def _regex_allowed(tokens: list[Token]) -> bool:
    previous = tokens[-1] if tokens else None
    return previous is None or (previous.kind in ("punct", "ident") and previous.text in _REGEX_AFTER)


def _regex(text: str, i: int) -> int:
    j, in_class = i + 1, False
    while j < len(text) and text[j] != "\n":
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == "[":
            in_class = True
        elif c == "]":
            in_class = False
        elif c == "/" and not in_class:
            j += 1
            while j < len(text) and (text[j].isalnum() or text[j] == "_"):
                j += 1
            return j
        j += 1
    raise LexError(f"unterminated regular expression at offset {i}")


def flavor_of(language: str) -> Flavor:
    """The lexer flavour of a polyglot language; Python has none (pytest grades it)."""
    flavors: dict[str, Flavor] = {
        "go": "go",
        "rust": "rust",
        "java": "java",
        "javascript": "javascript",
        "cpp": "cpp",
    }
    try:
        return flavors[language]
    except KeyError:
        raise ValueError(f"{language} has no twin writer") from None


def matching(tokens: list[Token], index: int) -> int:
    """Index of the bracket that closes the one at `index` (`(`, `[` or `{`)."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    opener = tokens[index].text
    closer = pairs[opener]
    depth = 0
    for j in range(index, len(tokens)):
        text = tokens[j].text
        if tokens[j].kind != "punct":
            continue
        if text == opener:
            depth += 1
        elif text == closer:
            depth -= 1
            if depth == 0:
                return j
    raise LexError(f"no bracket closes the {opener!r} at offset {tokens[index].start}")
