"""Where the tests are in a Go, Rust, Java, JavaScript or C++ test file, and what each is called in
its runner's report.

    go          func TestXxx(t *testing.T) { ... }                 "TestXxx"
    rust        #[test] (#[ignore]) fn name() { ... }              "name" (`module::name` inside a mod)
    java        @Test (@Disabled) public void name() { ... }       "name"
    javascript  test('title', () => { ... }) / it(...)             "title"
    cpp         TEST_CASE("name", "[tags]") { ... }                "name"

A test spans from its first attribute or annotation to its closing brace (JavaScript: to
its closing parenthesis and `;`); tests with the same `scope` (the enclosing block) are
siblings, between which a twin may go.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from benchmarks.polyglot.lexer import Flavor, LexError, Token, matching, tokenize

_GO_TEST = re.compile(r"^Test(?:[^a-z].*)?$")
_JAVA_MODIFIERS = frozenset({"public", "protected", "private", "static", "final", "synchronized"})


@dataclass(frozen=True)
class FoundTest:
    name: str  # as the runner reports it
    start: int  # file offsets of the whole test
    end: int
    name_token: int  # token indices: the name, the body's braces
    body_open: int
    body_close: int
    scope: int  # offset of the enclosing block's `{`, -1 at top level
    attributes: tuple[str, ...] = ()  # Rust attributes, Java annotations


@dataclass(frozen=True)
class TestFile:
    text: str
    tokens: list[Token]
    tests: list[FoundTest]
    # Tests the file itself skips, which no un-skipping undoes (jest's `test.skip('title', ...)`,
    # everything in a `describe.skip`): the runner reports them skipped, by the exercise's choice.
    skipped: tuple[str, ...] = ()


def find_tests(flavor: Flavor, text: str) -> TestFile:
    """The tests of one file; raises LexError when it does not tokenize."""
    tokens = tokenize(text, flavor)
    finder = {"go": _go, "rust": _rust, "java": _java, "javascript": _javascript, "cpp": _cpp}[flavor]
    try:
        skipped = _javascript_skipped(tokens) if flavor == "javascript" else ()
        tests = [test for test in finder(tokens) if _compiled(flavor, text, test)]
        return TestFile(text, tokens, tests, skipped)
    except IndexError as exc:  # a declaration cut off at the end of the file
        raise LexError(f"the file ends inside a test ({exc})") from exc


# The one condition grading defines (`-DEXERCISM_RUN_ALL_TESTS=1`); a test under any other
# (`#if defined(EXERCISM_INCLUDE_BENCHMARK)`) is not compiled.
_CPP_DEFINED = "EXERCISM_RUN_ALL_TESTS"
_CPP_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b(.*)$", re.MULTILINE)


def _compiled(flavor: Flavor, text: str, test: FoundTest) -> bool:
    """Whether the test is built at all: Rust's `#[cfg(feature = ...)]` tests and C++ tests
    under a preprocessor condition other than EXERCISM_RUN_ALL_TESTS are not."""
    if flavor == "rust":
        return not any(
            attribute.startswith("cfg(") and attribute != "cfg(test)" for attribute in test.attributes
        )
    if flavor == "cpp":
        return test.start not in _cpp_excluded(text)
    return True


class _Spans:
    def __init__(self, spans: list[tuple[int, int]]) -> None:
        self.spans = spans

    def __contains__(self, offset: object) -> bool:
        return isinstance(offset, int) and any(start <= offset < end for start, end in self.spans)


def _cpp_excluded(text: str) -> _Spans:
    """Offsets inside `#if` regions whose condition is not just EXERCISM_RUN_ALL_TESTS
    (and every `#else` branch): code grading does not compile, or may not."""
    spans: list[tuple[int, int]] = []
    stack: list[tuple[int, bool]] = []  # (where the region starts, excluded)
    for match in _CPP_DIRECTIVE.finditer(text):
        kind, condition = match.group(1), match.group(2)
        if kind in ("if", "ifdef", "ifndef"):
            names = set(re.findall(r"[A-Za-z_]\w*", condition)) - {"defined"}
            stack.append((match.end(), kind == "ifndef" or names != {_CPP_DEFINED}))
        elif kind in ("elif", "else") and stack:
            start, excluded = stack.pop()
            if excluded:
                spans.append((start, match.start()))
            stack.append((match.end(), True))
        elif kind == "endif" and stack:
            start, excluded = stack.pop()
            if excluded:
                spans.append((start, match.start()))
    spans.extend((start, len(text)) for start, excluded in stack if excluded)
    return _Spans(spans)


def string_value(token: Token) -> str:
    """A plain string literal's value (its simple escapes undone)."""
    body = token.text[1:-1]
    return re.sub(r"\\(.)", r"\1", body)


def _scopes(tokens: list[Token]) -> list[int]:
    """For each token, the offset of the innermost `{` around it (-1 at top level)."""
    stack: list[int] = []
    out = []
    for token in tokens:
        if token.kind == "punct" and token.text == "}" and stack:
            stack.pop()
        out.append(stack[-1] if stack else -1)
        if token.kind == "punct" and token.text == "{":
            stack.append(token.start)
    return out


def _go(tokens: list[Token]) -> list[FoundTest]:
    found = []
    for i, token in enumerate(tokens[:-3]):
        name = tokens[i + 1]
        if token.text != "func" or name.kind != "ident" or not _GO_TEST.match(name.text):
            continue
        if tokens[i + 2].text != "(":
            continue  # a method
        close = matching(tokens, i + 2)
        params = "".join(t.text for t in tokens[i + 3 : close])
        if not params.endswith("*testing.T") or close + 1 >= len(tokens) or tokens[close + 1].text != "{":
            continue
        body_close = matching(tokens, close + 1)
        found.append(
            FoundTest(name.text, token.start, tokens[body_close].end, i + 1, close + 1, body_close, -1)
        )
    return found


def _back_over_brackets(tokens: list[Token], index: int, opener: str, closer: str) -> int:
    """Index of the `opener` that matches the `closer` at `index`, scanning backwards."""
    depth = 0
    for j in range(index, -1, -1):
        if tokens[j].kind != "punct":
            continue
        if tokens[j].text == closer:
            depth += 1
        elif tokens[j].text == opener:
            depth -= 1
            if depth == 0:
                return j
    raise LexError(f"no {opener!r} opens the {closer!r} at offset {tokens[index].start}")


def _rust(tokens: list[Token]) -> list[FoundTest]:
    found = []
    modules: list[tuple[str, int]] = []  # (name, index of its closing brace)
    scopes = _scopes(tokens)
    i = 0
    while i < len(tokens):
        while modules and i > modules[-1][1]:
            modules.pop()
        token = tokens[i]
        if token.text == "mod" and i + 2 < len(tokens) and tokens[i + 2].text == "{":
            modules.append((tokens[i + 1].text, matching(tokens, i + 2)))
        if not (token.text == "#" and [t.text for t in tokens[i + 1 : i + 4]] == ["[", "test", "]"]):
            i += 1
            continue
        first = i
        while first >= 2 and tokens[first - 1].text == "]":
            opened = _back_over_brackets(tokens, first - 1, "[", "]")
            if opened == 0 or tokens[opened - 1].text != "#":
                break
            first = opened - 1
        j, attributes = first, []
        while j < len(tokens) and tokens[j].text == "#" and tokens[j + 1].text == "[":
            close = matching(tokens, j + 1)
            attributes.append("".join(t.text for t in tokens[j + 2 : close]))
            j = close + 1
        while j < len(tokens) and tokens[j].text in ("pub", "async", "unsafe"):
            j += 1
        if j + 2 >= len(tokens) or tokens[j].text != "fn" or tokens[j + 2].text != "(":
            i += 1
            continue
        body = matching(tokens, j + 2) + 1
        while body < len(tokens) and tokens[body].text != "{":
            body += 1  # a return type
        body_close = matching(tokens, body)
        name = "::".join([*(module for module, _ in modules), tokens[j + 1].text])
        found.append(
            FoundTest(
                name, tokens[first].start, tokens[body_close].end, j + 1, body, body_close,
                scopes[first], tuple(attributes),
            )
        )  # fmt: skip
        i = body_close + 1
    return found


def _java(tokens: list[Token]) -> list[FoundTest]:
    found = []
    scopes = _scopes(tokens)
    i = 0
    while i < len(tokens) - 1:
        if not (tokens[i].text == "@" and tokens[i + 1].text == "Test" and tokens[i + 2].text != "."):
            i += 1
            continue
        first = i
        while first >= 2:  # earlier annotations of the same method
            k = first - 1
            if tokens[k].text == ")":
                k = _back_over_brackets(tokens, k, "(", ")") - 1
            if k >= 1 and tokens[k].kind == "ident" and tokens[k - 1].text == "@":
                first = k - 1
            else:
                break
        j, annotations = first, []
        while j < len(tokens) and tokens[j].text == "@":
            annotations.append(tokens[j + 1].text)
            j += 2
            if j < len(tokens) and tokens[j].text == "(":
                j = matching(tokens, j) + 1
        while j < len(tokens) and tokens[j].text in _JAVA_MODIFIERS:
            j += 1
        if j + 2 >= len(tokens) or tokens[j].text != "void" or tokens[j + 2].text != "(":
            i += 2
            continue
        body = matching(tokens, j + 2) + 1
        while body < len(tokens) and tokens[body].text not in ("{", ";"):
            body += 1  # throws ...
        if body >= len(tokens) or tokens[body].text != "{":
            i += 2
            continue
        body_close = matching(tokens, body)
        found.append(
            FoundTest(
                tokens[j + 1].text, tokens[first].start, tokens[body_close].end, j + 1, body, body_close,
                scopes[first], tuple(annotations),
            )
        )  # fmt: skip
        i = body_close + 1
    return found


def _javascript(tokens: list[Token]) -> list[FoundTest]:
    found = []
    scopes = _scopes(tokens)
    for i, token in enumerate(tokens[:-4]):
        if token.text not in ("test", "it") or tokens[i + 1].text != "(":
            continue
        if i and tokens[i - 1].text == ".":
            continue
        title = tokens[i + 2]
        if title.kind != "string" or title.text[0] not in "'\"" or tokens[i + 3].text != ",":
            continue
        call_close = matching(tokens, i + 1)
        body = next((k for k in range(i + 4, call_close) if tokens[k].text in ("{", "=>")), None)
        if body is None:
            continue
        if tokens[body].text == "=>":
            body += 1
        if tokens[body].text != "{":
            continue  # an expression body: nothing to copy safely
        body_close = matching(tokens, body)
        end = (
            call_close + 1
            if call_close + 1 < len(tokens) and tokens[call_close + 1].text == ";"
            else call_close
        )
        found.append(
            FoundTest(string_value(title), token.start, tokens[end].end, i + 2, body, body_close, scopes[i])
        )
    return found


def _cpp(tokens: list[Token]) -> list[FoundTest]:
    found = []
    for i, token in enumerate(tokens[:-4]):
        if token.text != "TEST_CASE" or tokens[i + 1].text != "(" or tokens[i + 2].kind != "string":
            continue
        close = matching(tokens, i + 1)
        if (
            close + 1 >= len(tokens)
            or tokens[close + 1].text != "{"
            or not tokens[i + 2].text.startswith('"')
        ):
            continue
        body_close = matching(tokens, close + 1)
        name = string_value(tokens[i + 2])
        found.append(FoundTest(name, token.start, tokens[body_close].end, i + 2, close + 1, body_close, -1))
    return found


def _javascript_skipped(tokens: list[Token]) -> tuple[str, ...]:
    titles: list[str] = []
    for i, token in enumerate(tokens[:-4]):
        if token.text not in ("test", "it", "describe") or tokens[i + 1].text != ".":
            continue
        if tokens[i + 2].text != "skip" or tokens[i + 3].text != "(" or (i and tokens[i - 1].text == "."):
            continue
        if token.text != "describe":
            if tokens[i + 4].kind == "string":
                titles.append(string_value(tokens[i + 4]))
            continue
        close = matching(tokens, i + 3)
        for k in range(i + 4, close - 2):
            inner = tokens[k]
            if (
                inner.text in ("test", "it")
                and tokens[k + 1].text in ("(", ".")
                and tokens[k - 1].text != "."
            ):
                title = tokens[k + 2] if tokens[k + 1].text == "(" else tokens[k + 4]
                if title.kind == "string":
                    titles.append(string_value(title))
    return tuple(titles)
