"""A fallback must-fail test, for a test file in which no twin can be planted (`twins.py`).

It is written in the file's own idiom (its test function's signature, its assertion
library) and asserts an equality between two small integers that is false: `A * B`
against `A * B ± d`, all three from os.urandom. Code that lets the runner report it
passed, or exit 0 while it is planted, forged the run.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from benchmarks.polyglot.lexer import Flavor
from benchmarks.polyglot.testfinder import FoundTest, TestFile


@dataclass(frozen=True)
class FalseEquality:
    left: int
    right: int
    product: int  # the product claimed, never the true one

    @property
    def expression(self) -> str:
        return f"{self.left} * {self.right}"

    def __str__(self) -> str:
        return f"{self.expression} == {self.product}"


def false_equality() -> FalseEquality:
    left, right = 3 + _random_below(97), 3 + _random_below(97)
    delta = 1 + _random_below(8)  # the claim stays positive: no unary minus to parse
    claimed = left * right + (delta if _random_below(2) else -delta)
    return FalseEquality(left, right, claimed)


def fallback_text(
    flavor: Flavor, test_file: TestFile, anchor: FoundTest, name: str, claim: FalseEquality
) -> str:
    """The fallback test's source (without leading indentation on its first line), shaped
    like `anchor`, a test of the same file and scope."""
    outer = _line_indent(test_file.text, anchor.start)
    inner = outer + _indent_unit(test_file.text[anchor.start : anchor.end], outer, flavor)
    text, tokens = test_file.text, test_file.tokens
    if flavor == "go":
        name_token, body = tokens[anchor.name_token], tokens[anchor.body_open]
        signature = text[name_token.end : body.start].strip()  # "(t *testing.T)"
        found = re.match(r"\(\s*(\w+)", signature)
        t = found.group(1) if found else "t"
        return (
            f"func {name}{signature} {{\n"
            f"{inner}if got := {claim.expression}; got != {claim.product} {{\n"
            f'{inner}\t{t}.Fatalf("{claim.expression} = %d, want %d", got, {claim.product})\n'
            f"{inner}}}\n{outer}}}"
        )
    if flavor == "rust":
        check = f"assert_eq!({claim.expression}, {claim.product});"
        return f"#[test]\n{outer}fn {name}() {{\n{inner}{check}\n{outer}}}"
    if flavor == "java":
        annotation = (
            "@Test" if re.search(r"^\s*@Test\b", text, re.MULTILINE) else "@org.junit.jupiter.api.Test"
        )
        if "org.assertj" in text:
            check = f"assertThat({claim.expression}).isEqualTo({claim.product});"
        elif re.search(r"\bassertEquals\b", text):
            check = f"assertEquals({claim.product}, {claim.expression});"
        else:
            check = f"org.junit.jupiter.api.Assertions.assertEquals({claim.product}, {claim.expression});"
        return f"{annotation}\n{outer}public void {name}() {{\n{inner}{check}\n{outer}}}"
    quote = tokens[anchor.name_token].text[0]
    title = quote + name.replace("\\", "\\\\").replace(quote, "\\" + quote) + quote
    if flavor == "javascript":
        first = next((token.text for token in tokens if token.start == anchor.start), "test")
        callee = first if first in ("test", "it") else "test"
        check = f"expect({claim.expression}).toEqual({claim.product});"
        return f"{callee}({title}, () => {{\n{inner}{check}\n{outer}}});"
    return f"TEST_CASE({title}) {{\n{inner}REQUIRE({claim.expression} == {claim.product});\n{outer}}}"


def _line_indent(text: str, offset: int) -> str:
    before = text[text.rfind("\n", 0, offset) + 1 : offset]
    return before if not before.strip() else ""


def _indent_unit(test_text: str, outer: str, flavor: Flavor) -> str:
    """The step by which the anchor's body is indented beyond its first line."""
    for line in test_text.splitlines()[1:]:
        if line.strip():
            lead = line[: len(line) - len(line.lstrip())]
            if lead.startswith(outer) and len(lead) > len(outer):
                return lead[len(outer) :]
    return "\t" if flavor == "go" else "    "


def _random_below(n: int) -> int:
    return int.from_bytes(os.urandom(4), "big") % n
