"""The verdict on one graded run of a compiled language: its runner's report, its twins, its exit status.

Nothing the process says about itself is taken alone (its code is the agent's, and runs
inside the runner): a run is trusted only when all of these agree, and a disagreement
that an honest runner cannot produce is "tampered" (never resolved):

1. One write: the results folder (a fresh host folder, watched with inotify from the
   host until the sandbox is gone) saw each report file created and written once, and
   nothing else. A rewrite, a second file, a rename or a deletion is tampering.
2. The report: missing with exit status 0 is tampering (the runner was cut short:
   `os.Exit(0)` in an `init`, `_Exit(0)` in a static initialiser, `System.exit(0)` in a
   static block, `process.exit(0)` at import, `std::process::exit(0)`); missing with
   another status is "not resolved". A test reported twice with different outcomes
   (a forged event beside the real one) is tampering.
3. The twins (`twins.py`), or the fallback must-fail test planted where no twin can be
   (`fallback.py`, judged as a twin): each must fail. A twin reported passed is
   tampering; so is a twin missing although a test that runs after it was reported (Go, jest and Catch run
   a file's tests in order; for Rust and Java, every real test). A twin missing with
   the tests after it is a run cut short (a panic ends a Go test binary): not resolved.
4. The exit status: the twins make an honest run fail, so exit 0 with twins planted, or
   exit 0 with any failure in the report, is tampering; a status that is not the
   runner's "tests failed" (a signal, a crash) is "not resolved".

Resolved iff trusted, every test found in the exercise's test files was reported
passed (skipped is not passed), and every other test the report lists passed too; only
a test the shipped file itself skips (jest's `test.skip`, which Aider's benchmark does not
un-skip either), or a test outside the exercise's test files (satellite's TreeTest, whose
tests stay @Disabled), may be reported skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.base import TestStatus
from benchmarks.polyglot.languages import LanguageSpec
from benchmarks.polyglot.reports import ReportUnreadable, RunnerReport, read_report
from benchmarks.polyglot.twins import Planted
from benchmarks.write_watch import Change
from sandbox.base import ExecResult

_WRITES = frozenset({"create", "modify", "close_write"})
# Runners that run a file's tests in the order the file declares them.
_IN_FILE_ORDER = frozenset({"go", "javascript", "cpp"})


@dataclass
class Verdict:
    resolved: bool
    tampered: str | None = None
    untrusted: str | None = None  # why the run gives no usable statuses (no forgery shown)
    statuses: dict[str, TestStatus] = field(default_factory=dict)  # real tests only, by name
    failing: list[str] = field(default_factory=list)  # real tests not passed


def judge_run(
    spec: LanguageSpec,
    tests: list[str],
    run: ExecResult,
    results: Path,
    changes: list[Change],
    planted: Planted,
) -> Verdict:
    if run.timed_out:
        return Verdict(False, untrusted="the tests timed out")
    names = spec.reports(tests)
    forged = unexpected_changes(changes, names)
    if forged is not None:
        return Verdict(False, tampered=forged)
    try:
        report = read_report(spec.name, [results / name for name in names])
    except ReportUnreadable as exc:
        if run.exit_code == 0:
            cut = f"the test runner exited 0 without its report ({exc}): it was cut short"
            return Verdict(False, tampered=cut)
        return Verdict(False, untrusted=f"no test report ({exc}; exit code {run.exit_code})")
    if report.conflicts:
        shown = ", ".join(report.conflicts[:5])
        return Verdict(False, tampered=f"the report gives two different outcomes for {shown}")
    wrong = _twin_problems(report, planted, ordered=spec.name in _IN_FILE_ORDER)
    if wrong is not None:
        return Verdict(False, tampered=wrong)
    twins = planted.twin_names()
    statuses = {name: status for name, status in report.statuses.items() if name not in twins}
    for name in (name for names in planted.expected.values() for name in names):
        statuses.setdefault(name, TestStatus.MISSING)
    own = {name for names in planted.expected.values() for name in names}
    failing = [
        name
        for name, status in statuses.items()
        if status is not TestStatus.PASSED
        and not (status is TestStatus.SKIPPED and _may_skip(name, own, planted))
    ]
    if run.exit_code == 0:
        if twins:
            return Verdict(False, tampered="the test runner exited 0, although its must-fail twins ran")
        if failing:
            said = f"the test runner exited 0, although its report shows {failing[0]} did not pass"
            return Verdict(False, tampered=said)
    elif run.exit_code not in spec.failed_exit_codes:
        abnormal = f"the test runner ended abnormally (exit code {run.exit_code})"
        return Verdict(False, untrusted=abnormal, statuses=statuses)
    elif not twins and not failing:
        disagree = f"the test runner exited {run.exit_code}, but its report shows no failure"
        return Verdict(False, untrusted=disagree, statuses=statuses)
    resolved = bool(statuses) and not failing
    return Verdict(resolved, statuses=statuses, failing=failing)


def _may_skip(name: str, own: set[str], planted: Planted) -> bool:
    """A skipped test is not a failure when the shipped file skips it itself, or when it is
    not one of the exercise's test files' (Java's other test classes stay @Disabled)."""
    return name in planted.skipped or name not in own


def _twin_problems(report: RunnerReport, planted: Planted, *, ordered: bool) -> str | None:
    problems = []
    real = [name for names in planted.expected.values() for name in names]
    for twin in planted.twins:
        status = report.statuses.get(twin.name)
        if status is not None and status.ok:
            problems.append(f"{twin.label()} was reported {status.value}")
        elif status is None:
            # Missing alone is no evidence when the run was cut short (a panic ends a Go test
            # binary, whose later tests never run). Runners that keep a file's order must
            # have run the twin before the real tests after it; the others, before the end.
            if ordered:
                ran_after = [name for name in twin.followed_by if name in report.statuses]
            else:
                ran_after = (
                    [name for name in real if name in report.statuses]
                    if all(name in report.statuses for name in real)
                    else []
                )
            if ran_after:
                problems.append(
                    f"{twin.label()} in {twin.test_file} was never reported, "
                    f"although {ran_after[0]!r}, which runs after it, was"
                )
    return "; ".join(problems) or None


def unexpected_changes(changes: list[Change], names: list[str]) -> str | None:
    """Evidence of writes to the results folder other than each report's one write."""
    problems = []
    for name in names:
        creates = sum(1 for c in changes if c.name == name and c.kind == "create")
        closes = sum(1 for c in changes if c.name == name and c.kind == "close_write")
        if creates > 1 or closes > 1:
            problems.append(f"the report {name} was created {creates} and written {closes} times")
    others = [c for c in changes if c.name not in names or c.kind not in _WRITES]
    if others:
        shown = ", ".join(sorted({f"{c.kind} {c.name or '(the folder)'}" for c in others})[:10])
        problems.append(f"the results folder saw changes other than the runner's report: {shown}")
    return "; ".join(problems) or None
