"""Changing an expected value: the literals of an assertion's expected side, each to another value.

An equality assertion whose expected side has every number, string and boolean literal
changed fails for any code that passed it: each literal becomes a different value of
the same type (n -> n - 1 or n + 1 at random, 1 for 0; one letter or digit of a string, at a
random place, replaced by another of its kind drawn uniformly, its length and escapes kept;
true <-> false). The change is drawn so that it reads the same from either test of a pair.
Which side is expected follows the runner's convention (`expect(actual).toEqual(expected)`,
`assertThat(actual).isEqualTo(expected)`,
JUnit's `assertEquals(expected, actual)`), or, for `assert_eq!(a, b)` and `REQUIRE(a == b)`,
the side that holds literals and calls nothing (a variable is followed to its declaration
in the test).
"""

from __future__ import annotations

import re
import secrets
import string
from collections.abc import Sequence

from benchmarks.polyglot.lexer import Flavor, Token, matching

# Calls that build a value rather than compute the answer under test.
_BUILDERS = frozenset(
    {
        "vec", "from", "to_string", "to_owned", "into", "of", "asList", "string", "vector", "pair",
        "make_pair", "make_tuple", "tuple", "fromEntries", "copyOf", "to_vec", "iter", "collect",
        "cloned", "map", "chars", "new", "Set", "Map", "Array", "BigInt", "Number", "String",
    }
)  # fmt: skip
# The largest values of the languages' integer types: one more would not compile.
_TYPE_MAXES = frozenset({2**bits - 1 for bits in (7, 8, 15, 16, 31, 32, 63, 64, 127, 128)})
# Builders that are a type's static method: a builder only after a type's name (`List.of`).
_TYPE_BUILDERS = frozenset({"of", "asList", "copyOf", "fromEntries", "from"})
# Type suffixes: Rust's u8..usize, i8..isize, f32, f64; Java's L, F, D; C++'s u, l, ul, ll, f;
# JavaScript's BigInt n. Hexadecimal, octal, binary and exponents are not matched.
_SUFFIX = r"(?:[ui](?:8|16|32|64|128|size)|f32|f64|[uU]?[lL]{0,2}|[lL]{1,2}[uU]|[fFdDn])?"
_INTEGER = re.compile(rf"^(\d[\d_']*)({_SUFFIX})$")
_FLOAT = re.compile(rf"^(\d[\d_']*)?\.(\d[\d_']*)({_SUFFIX})$")
_CPP_RAW = re.compile(r'(?:u8|u|U|L)?R"([^(]*)\(')
_RUST_RAW = re.compile(r'b?r(#*)"')
_QUOTE = re.compile(r"(?:u8|u|U|L|b)?([\"'`])")
_ESCAPE = re.compile(r"\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{1,3}|.)")


def literal_tokens(tokens: Sequence[Token]) -> list[Token]:
    """The number, string and boolean literals of an expression, except those whose change
    would not compile: keys (`"A": 1`, which could collide in a Go map literal), generic
    arguments (`std::array<int, 3>`) and array lengths in types (Go's `[3]int{...}`, `[2][2]int`)."""
    out = []
    for index, token in enumerate(tokens):
        literal = token.kind in ("number", "string") or (
            token.kind == "ident" and token.text in ("true", "false")
        )
        after = [t.text for t in tokens[index + 1 : index + 3]]
        typed = len(tokens) > index + 2 and (
            tokens[index + 2].kind == "ident" or tokens[index + 2].text == "["
        )
        before = tokens[index - 1].text if index else ""
        key = after[:1] == [":"]
        generic = token.kind == "number" and after[:1] == [">"]
        length = token.kind == "number" and before == "[" and after[:1] == ["]"] and typed
        if literal and not (key or generic or length):
            out.append(token)
    return out


def perturbed(token: Token, flavor: Flavor) -> str | None:
    """Another value of `token`'s literal, or None when it is not one this can change."""
    text = token.text
    if token.kind == "ident":
        return {"true": "false", "false": "true"}.get(text)
    if token.kind == "number":
        return _number(text)
    if token.kind == "string":
        return _string(text, flavor)
    return None


def _number(text: str) -> str | None:
    # Up or down by one at random, so that of two tests differing in one number neither is
    # told to be the twin by the direction of the change. Never below zero (the literal may be
    # unsigned, or follow a minus without a space), never past a type's largest value.
    if match := _INTEGER.match(text):
        value = int(match.group(1).replace("_", "").replace("'", ""))
        down = value > 0 and (value in _TYPE_MAXES or secrets.randbelow(2) == 0)
        return f"{value - 1 if down else value + 1}{match.group(2) or ''}"
    if match := _FLOAT.match(text):
        whole = (match.group(1) or "0").replace("_", "").replace("'", "")
        number = float(f"{whole}.{match.group(2).replace('_', '').replace(chr(39), '')}")
        changed = number - 1 if number >= 1 and secrets.randbelow(2) == 0 else number + 1
        return f"{changed!r}{match.group(3) or ''}"
    return None  # hexadecimal, exponents: left alone


def _string(text: str, flavor: Flavor) -> str | None:
    raw = False
    if flavor == "cpp" and (match := _CPP_RAW.match(text)):
        start, end, raw = match.end(), len(text) - len(match.group(1)) - 2, True
    elif flavor == "rust" and (match := _RUST_RAW.match(text)):
        start, end, raw = match.end(), len(text) - 1 - len(match.group(1)), True
    elif text.startswith('"""') or not (match := _QUOTE.match(text)):
        return None  # a Java text block
    else:
        quote = match.group(1)
        if quote == "`" and flavor == "javascript" and "${" in text:
            return None  # a template with substitutions
        start, end, raw = match.end(), len(text) - 1, quote == "`" and flavor == "go"
    if end < start:
        return None
    body = text[start:end]
    spots = _plain_positions(body, raw=raw)
    if not spots:
        return text[:end] + "x" + text[end:] if not body else None
    # One letter or digit, at a random place, becomes another of its kind drawn uniformly: the
    # change reads the same from either string of the pair.
    at = spots[len(spots) - 1 - secrets.randbelow(len(spots))]
    c = body[at]
    kind = string.digits if c.isdigit() else string.ascii_uppercase if c.isupper() else string.ascii_lowercase
    others = kind.replace(c, "")
    replacement = others[secrets.randbelow(len(others))]
    return text[: start + at] + replacement + text[start + at + 1 :]


def _plain_positions(body: str, *, raw: bool) -> list[int]:
    """Positions of letters and digits in a string's body that are not part of an escape."""
    spots, i = [], 0
    while i < len(body):
        if not raw and body[i] == "\\":
            escape = _ESCAPE.match(body, i)
            i = escape.end() if escape else i + 1
            continue
        if body[i].isascii() and body[i].isalnum():
            spots.append(i)
        i += 1
    return spots


def is_computed(tokens: Sequence[Token]) -> bool:
    """Whether an expression calls something other than a value builder."""
    for index, token in enumerate(tokens[:-1]):
        after = tokens[index + 1]
        builder = token.text in _BUILDERS or token.text[:1].isupper()
        if token.text in _TYPE_BUILDERS:  # `List.of(...)`, `String::from(...)`; not `digits.of(9701)`
            qualifier = tokens[index - 2].text if index >= 2 and tokens[index - 1].text in (".", "::") else ""
            builder = qualifier[:1].isupper()
        if token.kind == "ident" and after.text == "(" and not builder:
            return True
    return False


def split_arguments(tokens: Sequence[Token], open_index: int) -> list[list[Token]]:
    """The top-level arguments of the bracket at `open_index`."""
    close = matching(list(tokens), open_index)
    arguments: list[list[Token]] = [[]]
    depth = 0
    for token in tokens[open_index + 1 : close]:
        if token.kind == "punct" and token.text in "([{":
            depth += 1
        elif token.kind == "punct" and token.text in ")]}":
            depth -= 1
        if depth == 0 and token.kind == "punct" and token.text == ",":
            arguments.append([])
            continue
        arguments[-1].append(token)
    return [argument for argument in arguments if argument]


def expected_side(
    sides: Sequence[Sequence[Token]], body: Sequence[Token], flavor: Flavor
) -> list[Token] | None:
    """The literals to change in an assertion comparing `sides` (two expressions)."""
    candidates = [list(side) for side in sides if literal_tokens(side) and not is_computed(side)]
    if len(candidates) == 1 and any(is_computed(side) for side in sides):
        return literal_tokens(candidates[0])
    for side in sides:
        if len(side) == 1 and side[0].kind == "ident" and only_expected(side[0].text, body):
            declared = declaration(side[0].text, body, side[0].start, flavor)
            if declared and literal_tokens(declared) and not is_computed(declared):
                return literal_tokens(declared)
    return None


def only_expected(name: str, body: Sequence[Token]) -> bool:
    """Whether the variable `name` appears in `body` only twice (its declaration and one
    assertion): a variable that is also an input would change on both sides."""
    uses = [
        index
        for index, token in enumerate(body)
        if token.kind == "ident" and token.text == name and not _is_field(body, index)
    ]
    return len(uses) == 2


def _is_field(body: Sequence[Token], index: int) -> bool:
    """Whether the name at `index` is a field or method (`x.name`), not a variable; a range
    (`0..name`, `0..=name`, lexed as dots) is a use of the variable."""
    before = [token.text for token in body[max(0, index - 3) : index]]
    if before[-1:] == ["="] and before[-3:-1] == [".", "."]:
        return False
    return before[-1:] == ["."] and before[-2:-1] != ["."]


def declaration(name: str, body: Sequence[Token], before: int, flavor: Flavor) -> list[Token] | None:
    """The initializer of the variable `name` declared in `body` before offset `before`:
    `let x = ...;`, `const x = ...;`, `T x = ...;`, C++'s `T x{...};` and `T x(...);`, Go's `x := ...`."""
    tokens = list(body)
    for index, token in enumerate(tokens):
        if token.start >= before:
            break
        if token.kind != "ident" or token.text != name or index + 1 >= len(tokens):
            continue
        previous = tokens[index - 1].text if index else ""
        if previous in (".", "->", "::"):
            continue
        nxt = tokens[index + 1]
        if nxt.text in ("=", ":="):
            return _until_statement_end(tokens, index + 2, flavor)
        if nxt.text == ":" and flavor == "rust":  # let x: T = ...
            equals = next((j for j in range(index + 2, len(tokens)) if tokens[j].text in ("=", ";")), None)
            if equals is not None and tokens[equals].text == "=":
                return _until_statement_end(tokens, equals + 1, flavor)
        if nxt.text in ("{", "(") and flavor == "cpp":
            return tokens[index + 1 : matching(tokens, index + 1) + 1]
    return None


def _until_statement_end(tokens: list[Token], start: int, flavor: Flavor) -> list[Token]:
    out: list[Token] = []
    depth = 0
    for token in tokens[start:]:
        if flavor == "go" and depth == 0 and out and token.newline_before:
            break  # Go ends a statement at the end of its line
        if token.kind == "punct" and token.text in "([{":
            depth += 1
        elif token.kind == "punct" and token.text in ")]}":
            depth -= 1
            if depth < 0:
                break
        if depth == 0 and token.text == ";":
            break
        out.append(token)
    return out


def rewrite(text: str, offset: int, changes: dict[int, str], tokens: Sequence[Token]) -> str:
    """`text` (starting at file offset `offset`) with the tokens starting at each key replaced."""
    out, cursor = [], 0
    for token in sorted((t for t in tokens if t.start in changes), key=lambda t: t.start):
        out.append(text[cursor : token.start - offset])
        out.append(changes[token.start])
        cursor = token.end - offset
    out.append(text[cursor:])
    return "".join(out)
