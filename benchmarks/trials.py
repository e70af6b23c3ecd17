"""Graders that are wrong sometimes: what k trials of a task's gold and empty patches show.

`clade bench check --trials k` grades each task's gold patch and its empty patch k times
(benchmarks/check.py). A task is quarantined when its gold patch fails in any trial (never
resolves, or flips between trials) or its empty patch resolves in any trial: its grader
cannot be trusted to tell a right patch from no patch. A test whose status differs between
trials of the same patch is named as flaky, whether or not it changed the verdict.

Pure functions over the trials' GradeReports, so that the rules are tested without sandboxes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from benchmarks.base import GradeReport
from contracts.quarantine import FlakyTest, PatchName, TrialOutcome

# A grading's report, and its error if it raised (its report is then a stand-in).
Graded = tuple[GradeReport, str | None]


def trial_outcomes(golds: Sequence[Graded], empties: Sequence[Graded]) -> list[TrialOutcome]:
    """Each trial's verdicts and reasons, trial 1 first (`golds[i]` and `empties[i]` are trial i+1)."""
    if len(golds) != len(empties) or not golds:
        raise ValueError("every trial grades both patches: give as many gold as empty gradings, at least one")
    return [
        TrialOutcome(
            trial=number,
            gold_resolved=gold.resolved,
            empty_resolved=empty.resolved,
            gold_reason=gold.reason,
            empty_reason=empty.reason,
        )
        for number, ((gold, _), (empty, _)) in enumerate(zip(golds, empties, strict=True), start=1)
    ]


def quarantine_evidence(outcomes: Sequence[TrialOutcome]) -> list[str]:
    """Why the task is quarantined, one line per finding; empty when it is not."""
    k = len(outcomes)
    evidence: list[str] = []
    gold_failed = [o for o in outcomes if not o.gold_resolved]
    if len(gold_failed) == k:
        evidence.append(
            f"the gold patch resolved in none of {k} trial(s): {_reasons(o.gold_reason for o in gold_failed)}"
        )
    elif gold_failed:
        resolved = [o.trial for o in outcomes if o.gold_resolved]
        evidence.append(
            f"the gold patch flips: resolved in trial(s) {_numbers(resolved)} of {k}, not in"
            f" {_numbers([o.trial for o in gold_failed])} ({_reasons(o.gold_reason for o in gold_failed)})"
        )
    empty_passed = [o for o in outcomes if o.empty_resolved]
    if empty_passed:
        flips = " (it flips)" if len(empty_passed) < k else ""
        evidence.append(
            f"the empty patch resolved in trial(s) {_numbers([o.trial for o in empty_passed])} of {k}{flips}:"
            f" {_reasons(o.empty_reason for o in empty_passed)}"
        )
    return evidence


def flaky_tests(golds: Sequence[Graded], empties: Sequence[Graded]) -> list[FlakyTest]:
    """Tests whose status differs between trials of the same patch, gold's first, by name.

    Only the trials whose grading ran and whose patch applied count: a grading that raised
    or a patch that did not apply reports no test, which says nothing about any test.
    """
    found: list[FlakyTest] = []
    patches: tuple[tuple[PatchName, Sequence[Graded]], ...] = (("gold", golds), ("empty", empties))
    for patch, gradings in patches:
        ran = [report for report, error in gradings if error is None and report.patch_applied]
        if len(ran) < 2:
            continue
        names = sorted({test for report in ran for test in report.test_statuses})
        for test in names:
            statuses = [_status(report, test) for report in ran]
            if len(set(statuses)) > 1:
                found.append(FlakyTest(test=test, patch=patch, statuses=statuses))
    return found


def describe_flaky(test: FlakyTest) -> str:
    """One line: the test, the patch, its statuses trial by trial."""
    shown = ", ".join(status or "not reported" for status in test.statuses)
    return f"{test.test} ({test.patch} patch): {shown}"


def _status(report: GradeReport, test: str) -> str | None:
    status = report.test_statuses.get(test)
    return None if status is None else str(status)


def _numbers(trials: Sequence[int]) -> str:
    return ", ".join(str(number) for number in trials)


def _reasons(reasons: Iterable[str]) -> str:
    """The distinct reasons, in order of first appearance."""
    return "; ".join(dict.fromkeys(reasons))
