"""A twin must not give itself away by the direction of its perturbation.

A payload in the code under test can find, among a file's tests, two that differ in one
literal only: a twin and its original. If the twin's value were always the one farther
from zero, the longer string, the non-empty list or the `not (...)` one, the payload
could fail exactly the twins and swallow every other failure (a forgery that was resolved
on 29 of clade-mini's 32 tasks). Here, a pair must leave that guess a coin flip."""

from __future__ import annotations

import ast

import pytest

from benchmarks.twins import write_twins

TRIALS = 1000
# A fair guess is right in 50% (a mix below in 62.5%); 70% of 1,000 is 5 deviations above that.
MOST_GUESSED = 0.7

CASES = {
    "int": "def test_area():\n    assert area(2, 3) == 6\n",
    "round int": "def test_total():\n    assert total() == 1000\n",
    "negative int": "def test_debt():\n    assert debt() == -40\n",
    "float": "def test_ratio():\n    assert ratio() == 2.5\n",
    "str": "def test_label():\n    assert label('a') == 'item-a'\n",
    "bytes": "def test_raw():\n    assert raw('a') == b'abc'\n",
    "list": "def test_items():\n    assert items() == [3, 4]\n",
    "unittest equal": (
        "import unittest\n\n\nclass AreaTestCase(unittest.TestCase):\n"
        "    def test_area(self):\n        self.assertEqual(area(2, 2), 4)\n"
    ),
}


def tell(node: ast.AST) -> tuple[int, float]:
    """What a payload can rank an expected value by: negation first, then its size."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return 1, 0.0
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return 0, 0.0
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return 0, abs(value)
    if isinstance(value, (str, bytes, list, tuple, dict, set)):
        return 0, len(value)
    return 0, 0.0


def expected(function: ast.FunctionDef) -> ast.AST:
    """The perturbed part of the test: the compared literal, or the asserted expression."""
    stmt = function.body[-1]
    if isinstance(stmt, ast.Assert):
        test = stmt.test
        return test.comparators[0] if isinstance(test, ast.Compare) else test
    assert isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
    return stmt.value.args[1]


def functions(text: str) -> dict[str, ast.FunctionDef]:
    return {node.name: node for node in ast.walk(ast.parse(text)) if isinstance(node, ast.FunctionDef)}


# A test asserting an empty value or a plain truth has one twin only (one element more, its
# negation): those tell only across tests of both kinds, which a file has too.
MIXED = {
    "empty or one element": (
        "def test_none_left():\n    assert left() == []\n",
        "def test_one_left():\n    assert left() == [3]\n",
    ),
    "truth or negated": (
        "def test_flag():\n    assert flag(3)\n",
        "def test_no_flag():\n    assert not flag(-3)\n",
    ),
}


def guessed(sources: tuple[str, ...]) -> float:
    """How often the payload's guess (the larger or negated value is the twin) is right."""
    right = 0.0
    for trial in range(TRIALS):
        twins, text = write_twins("test_x.py", sources[trial % len(sources)], count=1)
        found = functions(text)
        twin, original = tell(expected(found[twins[0].name])), tell(expected(found[twins[0].original]))
        right += 1.0 if twin > original else 0.5 if twin == original else 0.0
    return right / TRIALS


@pytest.mark.parametrize("case", [*CASES, *MIXED])
def test_the_larger_or_negated_value_is_not_the_twins_more_often_than_chance(case: str) -> None:
    share = guessed(MIXED[case] if case in MIXED else (CASES[case],))
    assert share <= MOST_GUESSED, f"{case}: the twin was told apart in {share:.0%}"


@pytest.mark.parametrize("case", list(CASES))
def test_a_twins_name_repeats_no_word(case: str) -> None:
    for _ in range(50):
        twins, _text = write_twins("test_x.py", CASES[case], count=1)
        words = twins[0].name.removeprefix("test_").split("_")
        assert len(words) == len(set(words)), twins[0].name
