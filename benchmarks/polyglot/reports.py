"""The test runners' own structured reports, read into one status per test.

Each compiled language's test command writes its runner's report into the grading's
results folder (see `languages.py`):

    go          `go test -json`                       test2json events, one JSON object a line
    rust        libtest `--format json`                one JSON object a line, per test target
    java        JUnit's console launcher `--reports-dir`   legacy JUnit XML
    javascript  jest `--json --outputFile`             one JSON document
    cpp         Catch's `-r xml -o`                    Catch's XML

A report is untrusted input (the code under test runs in the process that writes it):
it is read only if it is a regular file of bounded size, XML with a DOCTYPE is refused,
and a test reported twice with different outcomes is a `conflict` (a forged event next
to the real one) that the grader treats as tampering.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.base import TestStatus
from benchmarks.polyglot.languages import LanguageName

MAX_REPORT_BYTES = 20_000_000
# Worst first: a test with several entries (parameterised cases, subtests) takes the worst.
_RANK = {
    TestStatus.ERROR: 0,
    TestStatus.FAILED: 1,
    TestStatus.MISSING: 2,
    TestStatus.SKIPPED: 3,
    TestStatus.XFAIL: 4,
    TestStatus.PASSED: 5,
}


class ReportUnreadable(ValueError):
    """A report file is missing, not a regular file, too large, or not in its runner's format."""


@dataclass
class RunnerReport:
    """Per-test statuses of one grading's reports."""

    statuses: dict[str, TestStatus] = field(default_factory=dict)
    conflicts: list[str] = field(default_factory=list)  # tests reported with two outcomes

    def add(self, name: str, status: TestStatus) -> None:
        """One entry of a runner that reports each test once (a second differing one is a conflict)."""
        known = self.statuses.get(name)
        if known is not None and known is not status and name not in self.conflicts:
            self.conflicts.append(name)
        self.statuses[name] = status if known is None else worst(known, status)

    def merge(self, name: str, status: TestStatus) -> None:
        """One of several legitimate entries of a test (parameterised cases)."""
        known = self.statuses.get(name)
        self.statuses[name] = status if known is None else worst(known, status)


def worst(a: TestStatus, b: TestStatus) -> TestStatus:
    return a if _RANK[a] <= _RANK[b] else b


def read_report(language: LanguageName, paths: Iterable[Path]) -> RunnerReport:
    """The statuses in `paths` (the language's report files); raises ReportUnreadable."""
    parse = _PARSERS[language]
    report = RunnerReport()
    for path in paths:
        parse(_read(path), report)
    return report


def _read(path: Path) -> bytes:
    # The sandbox wrote this file: a link would make the host read one of its own files.
    if path.is_symlink() or not path.is_file():
        raise ReportUnreadable(f"{path.name} was not written")
    if path.stat().st_size > MAX_REPORT_BYTES:
        raise ReportUnreadable(f"{path.name} is larger than {MAX_REPORT_BYTES} bytes")
    return path.read_bytes()


def _json_lines(data: bytes) -> Iterable[dict[str, object]]:
    """The JSON objects of a stream; other lines (a compiler's, the code's) are skipped."""
    for line in data.splitlines():
        line = line.strip()
        if not line.startswith(b"{"):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            yield event


_GO_ACTIONS = {"pass": TestStatus.PASSED, "fail": TestStatus.FAILED, "skip": TestStatus.SKIPPED}


def parse_go(data: bytes, report: RunnerReport) -> None:
    """test2json: the end action (pass, fail, skip) of each top-level test; a subtest's failure
    fails its parent, which is what counts."""
    seen_event = False
    for event in _json_lines(data):
        action, test = event.get("Action"), event.get("Test")
        if isinstance(action, str):
            seen_event = True
        if not isinstance(test, str) or "/" in test or action not in _GO_ACTIONS:
            continue
        report.add(test, _GO_ACTIONS[str(action)])
    if not seen_event:
        raise ReportUnreadable("the go test report holds no test2json event")


_LIBTEST_EVENTS = {
    "ok": TestStatus.PASSED,
    "failed": TestStatus.FAILED,
    "ignored": TestStatus.SKIPPED,
    "timeout": TestStatus.FAILED,
}


def parse_libtest(data: bytes, report: RunnerReport) -> None:
    """libtest's JSON: each test's end event; `started` lines and suite events are framing."""
    suite = False
    for event in _json_lines(data):
        kind, name, outcome = event.get("type"), event.get("name"), event.get("event")
        if kind == "suite":
            suite = True
        if kind != "test" or not isinstance(name, str) or outcome not in _LIBTEST_EVENTS:
            continue
        report.add(name, _LIBTEST_EVENTS[str(outcome)])
    if not suite:
        raise ReportUnreadable("the libtest report has no suite event (the tests did not start)")


_JEST_STATUSES = {
    "passed": TestStatus.PASSED,
    "failed": TestStatus.FAILED,
    "pending": TestStatus.SKIPPED,
    "skipped": TestStatus.SKIPPED,
    "todo": TestStatus.SKIPPED,
    "disabled": TestStatus.SKIPPED,
    "focused": TestStatus.PASSED,
}


def parse_jest(data: bytes, report: RunnerReport) -> None:
    """jest's `--json` document: each assertion result by its title (a title used in two
    describe blocks takes the worse status); a test file that failed to run marks nothing."""
    try:
        document = json.loads(data)
    except ValueError as exc:
        raise ReportUnreadable(f"the jest report is not JSON: {exc}") from exc
    suites = document.get("testResults") if isinstance(document, dict) else None
    if not isinstance(suites, list):
        raise ReportUnreadable("the jest report has no testResults list")
    for suite in suites:
        results = suite.get("assertionResults") if isinstance(suite, dict) else None
        for result in results if isinstance(results, list) else []:
            if not isinstance(result, dict) or not isinstance(result.get("title"), str):
                continue
            status = _JEST_STATUSES.get(str(result.get("status")), TestStatus.ERROR)
            report.merge(result["title"], status)


def _xml(data: bytes, what: str) -> ElementTree.Element:
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise ReportUnreadable(f"the {what} declares a DOCTYPE or entities")
    try:
        return ElementTree.fromstring(data)
    except ElementTree.ParseError as exc:
        raise ReportUnreadable(f"the {what} is not XML: {exc}") from exc


def parse_junit(data: bytes, report: RunnerReport) -> None:
    """JUnit's legacy XML: each <testcase>, by method name (`name()` or a parameterised
    `name(int)[2]` -> `name`); a failure, error or skipped child decides its status."""
    root = _xml(data, "JUnit report")
    for case in root.iter("testcase"):
        name = (case.get("name") or "").split("(", 1)[0].split("[", 1)[0].strip()
        if not name:
            continue
        if case.find("error") is not None:
            status = TestStatus.ERROR
        elif case.find("failure") is not None:
            status = TestStatus.FAILED
        elif case.find("skipped") is not None:
            status = TestStatus.SKIPPED
        else:
            status = TestStatus.PASSED
        report.merge(name, status)


def parse_catch(data: bytes, report: RunnerReport) -> None:
    """Catch's XML reporter: each <TestCase> by name, passed iff its <OverallResult> says success."""
    root = _xml(data, "Catch report")
    for case in root.iter("TestCase"):
        name = case.get("name")
        if not name:
            continue
        result = case.find("OverallResult")
        if result is None:
            status = TestStatus.ERROR  # the test case never finished
        elif result.get("skips", "0") not in ("", "0"):
            status = TestStatus.SKIPPED
        else:
            status = TestStatus.PASSED if result.get("success") == "true" else TestStatus.FAILED
        report.add(name, status)


_PARSERS: dict[LanguageName, Callable[[bytes, RunnerReport], None]] = {
    "go": parse_go,
    "rust": parse_libtest,
    "java": parse_junit,
    "javascript": parse_jest,
    "cpp": parse_catch,
}


def report_log(language: LanguageName, paths: Iterable[Path], limit: int) -> str:
    """What a report holds of the tests' own output, for the grading's log: Go's output
    events, libtest's captured output of failed tests, Catch's XML. jest and JUnit's
    launcher print theirs to the console already. At most `limit` characters (the end)."""
    parts: list[str] = []
    for path in paths:
        try:
            data = _read(path)
        except ReportUnreadable:
            continue
        if language == "go":
            parts.extend(str(event.get("Output", "")) for event in _json_lines(data))
        elif language == "rust":
            for event in _json_lines(data):
                if event.get("event") == "failed" and event.get("type") == "test":
                    parts.append(f"---- {event.get('name')} ----\n{event.get('stdout', '')}\n")
        elif language == "cpp":
            parts.append(data.decode(errors="replace"))
    return "".join(parts)[-limit:]
