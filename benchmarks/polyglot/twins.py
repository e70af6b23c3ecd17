"""Must-fail twins for Go, Rust, Java, JavaScript and C++: copies of real tests under fresh names,
with their expected values changed (`perturb.py`), planted among the tests they copy.

Code that gets a test right fails its twin; a report in which a twin passed (everything
"passed") or is missing although its file ran was forged. The twins are fresh for every
grading: which tests are copied, their names (made of words of the file's own test
names) and where they go (before a random sibling test, or after the last) come from
os.urandom. Go's table-driven tests are copied with their table (under a fresh name) and
the table's expected fields changed in every case, so at least one case fails whatever
the others' flags say.

When no test of the exercise has an expected value this can find, a fallback must-fail
test (`fallback.py`: a false equality of two small integers, in the file's idiom) goes
among one file's tests instead, under a fresh name, and counts as a twin in the verdict;
grading says so ("no twin could be planted ...: a fallback must-fail test instead").
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.polyglot.fallback import fallback_text, false_equality
from benchmarks.polyglot.lexer import Flavor, LexError, Token, matching, tokenize
from benchmarks.polyglot.perturb import (
    declaration,
    expected_side,
    is_computed,
    literal_tokens,
    only_expected,
    perturbed,
    rewrite,
    split_arguments,
)
from benchmarks.polyglot.testfinder import FoundTest, TestFile, find_tests

TWINS_PER_GRADING = 2
_WORDS = (
    "accepts", "basic", "boundary", "case", "combined", "default", "empty", "handles", "input",
    "large", "long", "mixed", "multiple", "negative", "ordinary", "other", "repeated", "returns",
    "several", "short", "simple", "single", "small", "value", "works",
)  # fmt: skip
_JS_MATCHERS = frozenset(
    {"toEqual", "toBe", "toStrictEqual", "toBeCloseTo", "toMatchObject", "toHaveLength", "toThrow",
     "toThrowError", "toContainEqual", "toContain"}
)  # fmt: skip
_JAVA_ALL_ARGS = frozenset({"containsExactly", "containsExactlyInAnyOrder", "containsOnly"})
_JAVA_FIRST_ARG = frozenset({"isEqualTo", "hasMessage", "hasSize", "isEqualToIgnoringCase", "isCloseTo"})
_GO_FAILURES = frozenset({"Fatal", "Fatalf", "Error", "Errorf", "Fail", "FailNow"})
_GO_ZERO_VALUES = frozenset({'""', "``", "0", "false"})
_GO_EXPECTED_NAME = re.compile(r"^(want|wanted|expected|expect|exp)\w*$", re.IGNORECASE)


class TwinError(ValueError):
    """A test could not be twinned (its expected value is not a literal this can change)."""


@dataclass(frozen=True)
class Twin:
    name: str  # as the runner reports it
    copy_of: str
    test_file: str
    # The real tests after it in its file: runners that run a file's tests in order (Go,
    # jest, Catch) have run the twin before any of these.
    followed_by: tuple[str, ...] = ()
    # A fallback must-fail test copies nothing: the false equality it asserts.
    fallback: str | None = None

    def label(self) -> str:
        if self.fallback is not None:
            return f"the must-fail fallback test {self.name!r} (it asserts {self.fallback})"
        return (
            f"the must-fail twin {self.name!r} (a copy of {self.copy_of!r} with its expected value changed)"
        )


@dataclass
class Planted:
    twins: list[Twin] = field(default_factory=list)
    expected: dict[str, list[str]] = field(default_factory=dict)  # test file -> its real tests
    notes: list[str] = field(default_factory=list)  # why a file got no twin
    skipped: set[str] = field(default_factory=set)  # tests the shipped files themselves skip

    def twin_names(self) -> set[str]:
        return {twin.name for twin in self.twins}

    def fallback(self) -> bool:
        """Whether the must-fail tests are fallbacks (no twin could be planted)."""
        return any(twin.fallback is not None for twin in self.twins)


@dataclass(frozen=True)
class _Candidate:
    test_file: str
    test: FoundTest
    changes: dict[int, str]  # token start -> new text, inside the test
    table: str | None = None  # Go: a copied table's declaration (with its fresh name placeholder)
    table_ref: int | None = None  # Go: token start of the table's name in the test


def plant_twins(flavor: Flavor, repo: Path, test_files: list[str], count: int = TWINS_PER_GRADING) -> Planted:
    """Plant up to `count` twins in `repo`'s `test_files` (edited in place)."""
    planted = Planted()
    parsed: dict[str, TestFile] = {}
    for name in test_files:
        path = repo / name
        if path.is_symlink() or not path.is_file():
            planted.notes.append(f"{name} is not a regular file")
            continue
        try:
            parsed[name] = find_tests(flavor, path.read_text(errors="replace"))
        except LexError as exc:
            planted.notes.append(f"{name} could not be read as {flavor} source: {exc}")
            continue
        planted.expected[name] = [test.name for test in parsed[name].tests]
        planted.skipped.update(parsed[name].skipped)
    context = _package_sources(flavor, repo, parsed)
    candidates: list[_Candidate] = []
    for name, test_file in parsed.items():
        runnable = [test for test in test_file.tests if test.name not in test_file.skipped]
        own = [c for test in runnable if (c := _candidate(flavor, name, test_file, test, context))]
        if not own:
            planted.notes.append(f"no test in {name} has an expected value a twin can change")
        candidates.extend(own)
    chosen = _sample(candidates, count)
    taken = "\n".join(file.text for file in parsed.values()) + "\n".join(context.values())
    edits: dict[str, list[tuple[int, str]]] = {}
    for candidate in chosen:
        test_file = parsed[candidate.test_file]
        words = _words(flavor, [t.name for t in test_file.tests])
        twin_name = _fresh(flavor, words, taken)
        taken += "\n" + twin_name
        text, table_name = _twin_text(flavor, test_file, candidate, twin_name, taken)
        if table_name is not None:
            taken += "\n" + table_name
        reported = twin_name
        if flavor == "rust" and "::" in candidate.test.name:
            reported = candidate.test.name.rsplit("::", 1)[0] + "::" + twin_name
        offset, insert = _placement(test_file, candidate.test, text)
        later = tuple(test.name for test in test_file.tests if test.start >= offset)
        planted.twins.append(Twin(reported, candidate.test.name, candidate.test_file, later))
        edits.setdefault(candidate.test_file, []).append((offset, insert))
    if not chosen:
        _plant_fallback(flavor, parsed, taken, planted, edits)
    for name, inserts in edits.items():
        text = parsed[name].text
        for offset, insert in sorted(inserts, key=lambda item: item[0], reverse=True):
            text = text[:offset] + insert + text[offset:]
        (repo / name).write_text(text)
    return planted


def _plant_fallback(
    flavor: Flavor,
    parsed: dict[str, TestFile],
    taken: str,
    planted: Planted,
    edits: dict[str, list[tuple[int, str]]],
) -> None:
    """One fallback must-fail test among the runnable tests of a random test file."""
    runnable = {
        name: tests
        for name, test_file in parsed.items()
        if (tests := [test for test in test_file.tests if test.name not in test_file.skipped])
    }
    if not runnable:
        return
    files = sorted(runnable)
    name = files[_random_below(len(files))]
    test_file, anchor = parsed[name], runnable[name][_random_below(len(runnable[name]))]
    fresh = _fresh(flavor, _words(flavor, [t.name for t in test_file.tests]), taken)
    claim = false_equality()
    offset, insert = _placement(test_file, anchor, fallback_text(flavor, test_file, anchor, fresh, claim))
    reported = fresh
    if flavor == "rust" and "::" in anchor.name:
        reported = anchor.name.rsplit("::", 1)[0] + "::" + fresh
    later = tuple(test.name for test in test_file.tests if test.start >= offset)
    planted.twins.append(Twin(reported, "", name, later, fallback=str(claim)))
    edits.setdefault(name, []).append((offset, insert))


def _package_sources(flavor: Flavor, repo: Path, parsed: dict[str, TestFile]) -> dict[str, str]:
    """Go: the other `_test.go` files of the test files' packages (tables often live there)."""
    if flavor != "go":
        return {}
    out: dict[str, str] = {}
    for name in parsed:
        for path in sorted((repo / name).parent.glob("*_test.go")):
            relative = str(path.relative_to(repo))
            if relative not in parsed and not path.is_symlink() and path.is_file():
                out[relative] = path.read_text(errors="replace")
    return out


def _sample(candidates: list[_Candidate], count: int) -> list[_Candidate]:
    pool = list(candidates)
    chosen: list[_Candidate] = []
    while pool and len(chosen) < count:
        chosen.append(pool.pop(_random_below(len(pool))))
    return chosen


def _random_below(n: int) -> int:
    return int.from_bytes(os.urandom(4), "big") % n


def _placement(test_file: TestFile, copied: FoundTest, twin: str) -> tuple[int, str]:
    """Where the twin goes: before a random sibling of the test it copies, or after the last."""
    siblings = [test for test in test_file.tests if test.scope == copied.scope]
    spot = _random_below(len(siblings) + 1)
    text = test_file.text
    if spot == len(siblings):
        last = siblings[-1]
        line_start = text.rfind("\n", 0, last.start) + 1
        indent = text[line_start : last.start] if not text[line_start : last.start].strip() else ""
        return last.end, f"\n\n{indent}{twin}"
    before = siblings[spot]
    line_start = text.rfind("\n", 0, before.start) + 1
    indent = text[line_start : before.start] if not text[line_start : before.start].strip() else ""
    return before.start, f"{twin}\n\n{indent}"


def _words(flavor: Flavor, names: list[str]) -> list[str]:
    own: set[str] = set()
    for name in names:
        name = name.rsplit("::", 1)[-1].removeprefix("Test")
        parts = re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", name) if flavor in ("go", "java") else None
        own.update(word.lower() for word in (parts or re.split(r"[\s_\-]+", name)) if word.isalpha())
    return sorted({*_WORDS, *own})


def _fresh(flavor: Flavor, words: list[str], taken: str) -> str:
    while True:
        pool = list(words)
        picked = [pool.pop(_random_below(len(pool))) for _ in range(min(len(pool), 2 + _random_below(3)))]
        if flavor == "go":
            name = "Test" + "".join(word.capitalize() for word in picked)
        elif flavor == "java":
            name = picked[0] + "".join(word.capitalize() for word in picked[1:])
        elif flavor == "rust":
            name = "_".join(picked)
        else:
            name = " ".join(picked)
        if name not in taken:
            return name


def _twin_text(
    flavor: Flavor, test_file: TestFile, candidate: _Candidate, name: str, taken: str
) -> tuple[str, str | None]:
    test, tokens = candidate.test, test_file.tokens
    name_token = tokens[test.name_token]
    changes = dict(candidate.changes)
    if flavor in ("javascript", "cpp"):
        quote = name_token.text[0]
        changes[name_token.start] = quote + name.replace("\\", "\\\\").replace(quote, "\\" + quote) + quote
    else:
        changes[name_token.start] = name
    table_name = None
    if candidate.table is not None and candidate.table_ref is not None:
        table_name = _fresh_identifier(taken)
        changes[candidate.table_ref] = table_name
    span = [t for t in tokens if test.start <= t.start < test.end]
    text = rewrite(test_file.text[test.start : test.end], test.start, changes, span)
    if candidate.table is not None and table_name is not None:
        text = f"var {table_name} = {candidate.table}\n\n{text}"
    return text, table_name


def _fresh_identifier(taken: str) -> str:
    while True:
        picked = (_WORDS[_random_below(len(_WORDS))] for _ in range(2))
        name = "cases" + "".join(word.capitalize() for word in picked)
        if name not in taken:
            return name


def _candidate(
    flavor: Flavor, file_name: str, test_file: TestFile, test: FoundTest, context: dict[str, str]
) -> _Candidate | None:
    if flavor == "rust" and any(attribute.startswith("should_panic") for attribute in test.attributes):
        return None  # its expected value is the panic's message, in the attribute
    body = test_file.tokens[test.body_open : test.body_close + 1]
    if flavor == "go":
        return _go_candidate(file_name, test_file, test, body, context)
    targets = {
        "javascript": _javascript_targets,
        "java": _java_targets,
        "rust": _rust_targets,
        "cpp": _cpp_targets,
    }[flavor](body)
    changes = _changes(flavor, targets)
    return _Candidate(file_name, test, changes) if changes else None


def _changes(flavor: Flavor, targets: list[Token]) -> dict[int, str]:
    out = {}
    for token in targets:
        new = perturbed(token, flavor)
        if new is not None and new != token.text:
            out[token.start] = new
    return out


def _matcher_targets(body: list[Token], opener: str) -> list[Token]:
    """JavaScript: the literals of `expect(...)...matcher(expected)` (never under `.not`)."""
    out: list[Token] = []
    for i, token in enumerate(body):
        if token.text != opener or i + 1 >= len(body) or body[i + 1].text != "(":
            continue
        j = matching(body, i + 1) + 1
        chain: list[str] = []
        while j + 1 < len(body) and body[j].text == "." and body[j + 1].kind == "ident":
            chain.append(body[j + 1].text)
            j += 2
            if j < len(body) and body[j].text == "(":
                if chain[-1] in _JS_MATCHERS and "not" not in chain:
                    arguments = split_arguments(body, j)
                    if arguments:
                        out.extend(_value_literals(arguments[0], body, "javascript"))
                break
    return out


def _value_literals(argument: list[Token], body: list[Token], flavor: Flavor) -> list[Token]:
    if len(argument) == 1 and argument[0].kind == "ident" and argument[0].text not in ("true", "false"):
        if not only_expected(argument[0].text, body):
            return []  # also an input of the code under test: changing it changes both
        declared = declaration(argument[0].text, body, argument[0].start, flavor)
        return literal_tokens(declared) if declared and not is_computed(declared) else []
    return literal_tokens(argument) if not is_computed(argument) else []


def _javascript_targets(body: list[Token]) -> list[Token]:
    return _matcher_targets(body, "expect")


def _java_targets(body: list[Token]) -> list[Token]:
    out: list[Token] = []
    for i, token in enumerate(body[:-1]):
        if body[i + 1].text != "(" or token.kind != "ident":
            continue
        method = token.text
        chained = i > 0 and body[i - 1].text == "."
        if chained and method in _JAVA_ALL_ARGS:
            for argument in split_arguments(body, i + 1):
                out.extend(_value_literals(argument, body, "java"))
        elif (chained and method in _JAVA_FIRST_ARG) or method == "assertEquals":
            arguments = split_arguments(body, i + 1)
            if arguments:
                out.extend(_value_literals(arguments[0], body, "java"))
    return out


def _rust_targets(body: list[Token]) -> list[Token]:
    out: list[Token] = []
    for i, token in enumerate(body[:-2]):
        if token.text == "assert_eq" and body[i + 1].text == "!" and body[i + 2].text in "([":
            arguments = split_arguments(body, i + 2)
            if len(arguments) >= 2:
                out.extend(expected_side(arguments[:2], body, "rust") or [])
    return out


def _cpp_targets(body: list[Token]) -> list[Token]:
    out: list[Token] = []
    for i, token in enumerate(body[:-1]):
        if token.text not in ("REQUIRE", "CHECK") or body[i + 1].text != "(":
            continue
        inside = split_arguments(body, i + 1)
        if len(inside) != 1:
            continue
        expression, depth, equals = inside[0], 0, []
        for k, part in enumerate(expression):
            if part.kind == "punct" and part.text in "([{":
                depth += 1
            elif part.kind == "punct" and part.text in ")]}":
                depth -= 1
            elif depth == 0 and part.text == "==":
                equals.append(k)
        if len(equals) == 1:
            sides = [expression[: equals[0]], expression[equals[0] + 1 :]]
            out.extend(expected_side(sides, body, "cpp") or [])
    return out


def _go_candidate(
    file_name: str, test_file: TestFile, test: FoundTest, body: list[Token], context: dict[str, str]
) -> _Candidate | None:
    changes = _changes("go", _go_direct_targets(body))
    if changes:
        return _Candidate(file_name, test, changes)
    return _go_table_candidate(file_name, test_file, test, body, context)


def _go_direct_targets(body: list[Token]) -> list[Token]:
    out: list[Token] = []
    for i, token in enumerate(body):
        named = token.kind == "ident" and _GO_EXPECTED_NAME.match(token.text) and i + 1 < len(body)
        if named and body[i + 1].text in (":=", "=") and (i == 0 or body[i - 1].text not in (".", ",")):
            declared = declaration(token.text, body, body[i + 1].end, "go")
            if declared and not is_computed(declared):
                out.extend(literal_tokens(declared))
        if token.text in ("!=", "==") and 0 < i < len(body) - 2:
            after, beyond = body[i + 1], body[i + 2]
            if literal_tokens([after]) and beyond.text in ("{", "&&", "||", ")") and _go_fails_in(body, i):
                out.append(after)
    return out


def _go_fails_in(body: list[Token], at: int) -> bool:
    """Whether the `if` block that follows the comparison at `at` fails the test (a guard
    that returns early is not an assertion)."""
    block = next((k for k in range(at, len(body)) if body[k].text == "{"), None)
    if block is None:
        return False
    inside = body[block : matching(body, block) + 1]
    return any(
        token.text in _GO_FAILURES and k and inside[k - 1].text == "." for k, token in enumerate(inside)
    )


def _go_table_candidate(
    file_name: str, test_file: TestFile, test: FoundTest, body: list[Token], context: dict[str, str]
) -> _Candidate | None:
    """A test that ranges over a package-level table: the table copied with its expected
    fields (those the test compares with `!=`, `==` or DeepEqual) changed in every case."""
    for i, token in enumerate(body[:-1]):
        if token.text != "range" or body[i + 1].kind != "ident" or i < 3 or body[i - 1].text != ":=":
            continue
        table, loop_var = body[i + 1], body[i - 2]
        if i + 2 < len(body) and body[i + 2].text in (".", "("):
            continue
        fields = _go_compared_fields(body, loop_var.text)
        if not fields:
            continue
        sources = [test_file.text, *context.values()]
        for source in sources:
            copied = _go_table_copy(source, table.text, fields)
            if copied is not None:
                return _Candidate(file_name, test, {}, table=copied, table_ref=table.start)
    return None


def _go_compared_fields(body: list[Token], loop_var: str) -> set[str]:
    fields = set()
    for i, token in enumerate(body[:-2]):
        if token.text != loop_var or body[i + 1].text != "." or body[i + 2].kind != "ident":
            continue
        before = body[i - 1].text if i else ""
        after = body[i + 3].text if i + 3 < len(body) else ""
        in_deep_equal = any(t.text == "DeepEqual" for t in body[max(0, i - 8) : i])
        if before in ("!=", "==") or after in ("!=", "==") or in_deep_equal:
            fields.add(body[i + 2].text)
    return fields


def _go_table_copy(source: str, table: str, fields: set[str]) -> str | None:
    """The table `table`'s composite literal from `source`, expected fields changed; None if absent."""
    try:
        tokens = tokenize(source, "go")
    except LexError:
        return None
    for i, token in enumerate(tokens[:-2]):
        if token.text != table or tokens[i + 1].text != "=" or (i and tokens[i - 1].text in (".", ",")):
            continue
        declared_here = tokens[i - 1].text in ("var", "(") or token.newline_before
        if i == 0 or not declared_here:
            continue
        j = i + 2
        order: list[str] = []
        while j < len(tokens) and tokens[j].text != "{":
            if tokens[j].text == "struct" and j + 1 < len(tokens) and tokens[j + 1].text == "{":
                close = matching(tokens, j + 1)
                order = _struct_fields(tokens[j + 2 : close])
                j = close + 1
                continue
            j += 1
        if j >= len(tokens):
            return None
        if not order:
            named = tokens[j - 1].text
            order = _named_struct_fields(tokens, named)
        close = matching(tokens, j)
        changes: dict[int, str] = {}
        effective = False
        for element in split_arguments(tokens, j):
            changed = _element_changes(element, fields, order)
            changes.update(changed)
            # A zero value is often a placeholder the test ignores (the expected output
            # of a case that expects an error): it alone does not make the twin fail.
            effective = effective or any(
                token.text not in _GO_ZERO_VALUES for token in element if token.start in changed
            )
        if not effective:
            return None
        span = tokens[i + 2 : close + 1]
        start, end = span[0].start, span[-1].end
        return rewrite(source[start:end], start, changes, span)
    return None


def _struct_fields(tokens: list[Token]) -> list[str]:
    """Field names in order from a struct body (`in, want int` lines)."""
    names: list[str] = []
    line: list[Token] = []
    for token in [*tokens, Token("punct", 0, 0, ";", True)]:
        if (token.newline_before or token.text == ";") and line:
            k = 0
            while k < len(line) and line[k].kind == "ident":
                names.append(line[k].text)
                if k + 1 < len(line) and line[k + 1].text == ",":
                    k += 2
                    continue
                break
            line = []
        if token.text != ";":
            line.append(token)
    return names


def _named_struct_fields(tokens: list[Token], name: str) -> list[str]:
    for i, token in enumerate(tokens[:-3]):
        if token.text == "type" and tokens[i + 1].text == name and tokens[i + 2].text == "struct":
            return _struct_fields(tokens[i + 4 : matching(tokens, i + 3)])
    return []


def _element_changes(element: list[Token], fields: set[str], order: list[str]) -> dict[int, str]:
    """One case of a table: its expected fields' literals changed."""
    if not element:
        return {}
    brace = next((k for k, t in enumerate(element) if t.text == "{"), None)
    if brace is None:
        return {}
    if brace and element[brace - 1].text == ":" and brace >= 2:
        pass  # a map entry `"key": {...}`: the value's fields follow
    values = split_arguments(element, brace)
    changes: dict[int, str] = {}
    for position, value in enumerate(values):
        if len(value) >= 2 and value[0].kind == "ident" and value[1].text == ":":
            field_name, expression = value[0].text, value[2:]
        elif position < len(order):
            field_name, expression = order[position], value
        else:
            continue
        if field_name in fields and not is_computed(expression):
            changes.update(_changes("go", literal_tokens(expression)))
    return changes
