"""Status lines that Django's `tests/runtests.py` or sympy's `bin/test` cannot have printed.

The SWE-bench harness reads these runners' logs line by line (`parse_log_django`,
`parse_log_sympy`), so code in the test process can print a status line of its own. These
checks read the test section of the log (between the harness's markers) the way those
parsers do and find what an honest run never prints:

- a status line after the runner's final summary (Django, as unittest: "Ran N tests in Xs"
  then "OK" or "FAILED (...)"; sympy: "tests finished: ... in X seconds"), or more final
  summaries than the test command runs the runner;
- a test reported passed and also failed, errored or skipped (Django: by its full name;
  sympy: by its function name within one file's section);
- more passed tests than the summary counts (sympy: "N passed"; Django: "Ran N tests");
- a summary that reports failures while the test command exited 0.

A line that only starts with "ok" (parse_log_django credits it to the last test named) is no
evidence: an honest traceback can hold one. When it turns a failed test into a pass,
`credited_passes` says so and the verdict is "not resolved".

Counts are only checked in that direction: an honest test that prints breaks its own status
line (the parsers then miss it), so fewer status lines than the summary says is no evidence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

START_MARKER = ">>>>> Start Test Output"
END_MARKER = ">>>>> End Test Output"

Runner = Literal["django", "sympy"]

# What parse_log_django reads as a status, on a stripped line.
_DJANGO_PASS_SUFFIXES = (" ... ok", " ... OK", " ...  OK")
_DJANGO_OTHER = ((" ... FAIL", "failed"), (" ... ERROR", "error"))
_OK_LINE = "ok-line"  # parse_log_django's pass for a line that starts with "ok"
_DJANGO_RAN = re.compile(r"^Ran (\d+) tests? in [0-9.]+s$")
_DJANGO_RESULT = re.compile(r"^(OK|FAILED)\b(?: \((.*)\))?$")
_SYMPY_FINAL = re.compile(r"tests finished: (.*?),? in [0-9.]+ seconds")
_SYMPY_COUNT = re.compile(r"(\d+) (passed|failed|exceptions)\b")
_SYMPY_FILE = re.compile(r"^(\S+\.py)\[(\d+)\]")


@dataclass(frozen=True)
class Summary:
    """The final summary of one runner run, as far as the checks need it."""

    line: int  # index in the section's lines
    passed: int | None  # sympy: "N passed"; Django: "Ran N" (an upper bound on passes)
    failing: bool  # failures or errors reported


def test_section(log: str) -> str:
    """The part of the log between the harness's start and end markers."""
    return log.split(START_MARKER, 1)[-1].split(END_MARKER, 1)[0]


def forged_output(runner: Runner, log: str, exit_code: int | None, runs: int = 1) -> str | None:
    """Why the log of `runner` (run `runs` times by the test command) cannot be honest, or None."""
    lines = [line.strip() for line in test_section(log).splitlines()]
    if runner == "django":
        summaries, statuses = _django_summaries(lines), _django_statuses(lines)
    else:
        summaries, statuses = _sympy_summaries(lines), _sympy_statuses(lines)
    label = "Django's test runner" if runner == "django" else "sympy's bin/test"
    if len(summaries) > runs:
        shown = lines[summaries[-1].line][:200]
        return f"the log has {len(summaries)} final summaries of {label}, which ran {runs} time(s): {shown!r}"
    if summaries:
        last = summaries[-1]
        late = [lines[i] for i, _, status in statuses if i > last.line and status != _OK_LINE]
        if late:
            return f"status lines after {label}'s final summary: {late[0][:200]!r}"
    reported: dict[str, set[str]] = {}
    for _, test, status in statuses:
        if status != _OK_LINE:
            reported.setdefault(test, set()).add(status)
    both = sorted(test for test, found in reported.items() if "passed" in found and len(found) > 1)
    if both:
        others = sorted(reported[both[0]] - {"passed"})
        return f"the log reports {both[0]!r} both passed and {others[0]}"
    if summaries:
        last = summaries[-1]
        passes = sum(1 for found in reported.values() if "passed" in found)
        if last.passed is not None and passes > last.passed:
            return f"the log reports {passes} passed tests, {label}'s summary counts {last.passed}"
        if last.failing and exit_code == 0:
            return f"{label}'s summary reports failures, the test command exited 0"
    return None


def credited_passes(log: str) -> str | None:
    """A test that Django's log reports failed, errored or skipped and that a line starting with
    "ok" credits with a pass: parse_log_django gives every such line to the last test named
    ("test_x ... <output>" then "ok"), wherever it stands. Code under test can print one (in a
    failure's message, after the summary), but so can an honest traceback (`ok = check()`):
    no evidence of tampering, yet the pass is not to be believed."""
    reported: dict[str, set[str]] = {}
    credited: dict[str, str] = {}
    lines = [line.strip() for line in test_section(log).splitlines()]
    for i, test, status in _django_statuses(lines):
        if status == _OK_LINE:
            credited.setdefault(test, lines[i])
        else:
            reported.setdefault(test, set()).add(status)
    for test, line in credited.items():
        other = sorted(reported.get(test, set()) - {"passed"})
        if other:
            return f"the log reports {test!r} {other[0]}, and the line {line[:200]!r} makes it read passed"
    return None


def _django_statuses(lines: list[str]) -> list[tuple[int, str, str]]:
    """(line index, test, status) for every status parse_log_django takes from `lines`."""
    found = []
    previous = None
    for i, line in enumerate(lines):
        if " ... " in line:
            previous = line.split(" ... ")[0]
        status = None
        for suffix in _DJANGO_PASS_SUFFIXES:
            if line.endswith(suffix):
                found.append((i, line.rsplit(suffix, 1)[0], "passed"))
                status = "passed"
                break
        if " ... skipped" in line:
            found.append((i, line.split(" ... skipped")[0], "skipped"))
        for suffix, name in _DJANGO_OTHER:
            if line.endswith(suffix):
                found.append((i, line.split(suffix)[0], name))
        for prefix, name in (("FAIL: ", "failed"), ("ERROR: ", "error")):
            if line.startswith(prefix):
                found.append((i, line[len(prefix) :].strip(), name))
        if status is None and line.startswith("ok") and previous is not None:
            found.append((i, previous, _OK_LINE))
    return found


def _django_summaries(lines: list[str]) -> list[Summary]:
    summaries = []
    for i, line in enumerate(lines):
        ran = _DJANGO_RAN.match(line)
        if ran is None:
            continue
        # The result line follows after a blank one: "OK", "OK (skipped=2)", "FAILED (failures=1)".
        result = next((m for m in map(_DJANGO_RESULT.match, lines[i + 1 : i + 4]) if m), None)
        failing = result is not None and result.group(1) == "FAILED"
        summaries.append(Summary(line=i, passed=int(ran.group(1)), failing=failing))
    return summaries


def _sympy_statuses(lines: list[str]) -> list[tuple[int, str, str]]:
    """(line index, "file: test", status) for every status line parse_log_sympy reads."""
    found = []
    current = ""
    for i, line in enumerate(lines):
        header = _SYMPY_FILE.match(line)
        if header:
            current = header.group(1)
        if not line.startswith("test_"):
            continue
        for suffix, status in ((" ok", "passed"), (" F", "failed"), (" E", "error")):
            if line.endswith(suffix):
                # A function's name is unique within its file, not across the files of a run.
                found.append((i, f"{current}: {line.split()[0]}" if current else line.split()[0], status))
    return found


def _sympy_summaries(lines: list[str]) -> list[Summary]:
    summaries = []
    for i, line in enumerate(lines):
        if "tests finished:" not in line:
            continue
        # A long summary goes on over the next line ("...,\n1 exceptions, in 2.10 seconds").
        text = line if _SYMPY_FINAL.search(line) else " ".join(lines[i : i + 2])
        found = _SYMPY_COUNT.findall(text.split("tests finished:", 1)[1])
        counts = {kind: int(number) for number, kind in found}
        failing = counts.get("failed", 0) + counts.get("exceptions", 0) > 0
        summaries.append(Summary(line=i, passed=counts.get("passed", 0), failing=failing))
    return summaries
