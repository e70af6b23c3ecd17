"""The verdict on a compiled language's run, from its report, its twins, its exit status and the
results folder's writes (`verdict.py`), and the reports each runner writes (`reports.py`).

The runs here are described (an exit status, a report file, the folder's changes) rather
than run: `test_attacks.py` and `test_toolchains.py` produce the same in Docker.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.base import TestStatus
from benchmarks.polyglot.languages import SPECS
from benchmarks.polyglot.reports import ReportUnreadable, read_report
from benchmarks.polyglot.twins import Planted, Twin
from benchmarks.polyglot.verdict import judge_run
from benchmarks.write_watch import Change
from sandbox.base import ExecResult

GO = SPECS["go"]
REPORT = "go-test.json"
ONE_WRITE = [Change(REPORT, "create"), Change(REPORT, "modify"), Change(REPORT, "close_write")]


def planted(twins: bool = True) -> Planted:
    return Planted(
        twins=[Twin("TestTwin", "TestReal", "x_test.go", ("TestOther",))] if twins else [],
        expected={"x_test.go": ["TestReal", "TestOther"]},
    )


def go_report(folder: Path, outcomes: dict[str, str]) -> Path:
    lines = [{"Action": "start", "Package": "x"}]
    for test, action in outcomes.items():
        lines += [
            {"Action": "run", "Package": "x", "Test": test},
            {"Action": action, "Package": "x", "Test": test},
        ]
    (folder / REPORT).write_text("".join(json.dumps(line) + "\n" for line in lines))
    return folder


def run(exit_code: int, timed_out: bool = False) -> ExecResult:
    return ExecResult(exit_code=exit_code, stdout="", stderr="", duration_s=1.0, timed_out=timed_out)


HONEST = {"TestReal": "pass", "TestTwin": "fail", "TestOther": "pass"}


def test_an_honest_run_resolves(tmp_path: Path) -> None:
    verdict = judge_run(GO, ["x_test.go"], run(1), go_report(tmp_path, HONEST), ONE_WRITE, planted())
    assert verdict.resolved and verdict.tampered is None and verdict.untrusted is None
    assert verdict.statuses == {"TestReal": TestStatus.PASSED, "TestOther": TestStatus.PASSED}


@pytest.mark.parametrize(
    ("exit_code", "outcomes", "changes", "evidence"),
    [
        (1, {**HONEST, "TestTwin": "pass"}, ONE_WRITE, "twin 'TestTwin' (a copy of 'TestReal'"),
        (
            1,
            {"TestReal": "pass", "TestOther": "pass"},
            ONE_WRITE,
            "never reported, although 'TestOther', which runs after it",
        ),
        (0, HONEST, ONE_WRITE, "exited 0, although its must-fail twins ran"),
        (1, HONEST, [*ONE_WRITE, Change(REPORT, "close_write")], "created 1 and written 2 times"),
        (1, HONEST, [*ONE_WRITE, Change("other.json", "create")], "changes other than the runner's report"),
        (1, HONEST, [*ONE_WRITE, Change(REPORT, "moved_to")], "moved_to go-test.json"),
    ],
)
def test_disagreements_are_tampered(
    tmp_path: Path, exit_code: int, outcomes: dict[str, str], changes: list[Change], evidence: str
) -> None:
    verdict = judge_run(GO, ["x_test.go"], run(exit_code), go_report(tmp_path, outcomes), changes, planted())
    assert not verdict.resolved and verdict.tampered is not None and evidence in verdict.tampered


def test_a_forged_event_beside_the_real_one_is_tampered(tmp_path: Path) -> None:
    go_report(tmp_path, HONEST)
    with (tmp_path / REPORT).open("a") as out:
        out.write(json.dumps({"Action": "fail", "Package": "x", "Test": "TestReal"}) + "\n")
    verdict = judge_run(GO, ["x_test.go"], run(1), tmp_path, ONE_WRITE, planted())
    assert verdict.tampered == "the report gives two different outcomes for TestReal"


def test_no_report_is_tampered_after_exit_0_and_not_resolved_otherwise(tmp_path: Path) -> None:
    cut = judge_run(GO, ["x_test.go"], run(0), tmp_path, [], planted())
    assert cut.tampered is not None and "exited 0 without its report" in cut.tampered
    failed = judge_run(GO, ["x_test.go"], run(1), tmp_path, [], planted())
    assert (
        failed.tampered is None
        and failed.untrusted == f"no test report ({REPORT} was not written; exit code 1)"
    )
    timed = judge_run(GO, ["x_test.go"], run(-1, timed_out=True), tmp_path, [], planted())
    assert not timed.resolved and timed.untrusted == "the tests timed out"


def test_without_twins_the_report_and_the_exit_status_must_agree(tmp_path: Path) -> None:
    passed = {"TestReal": "pass", "TestOther": "pass"}
    alone = judge_run(GO, ["x_test.go"], run(0), go_report(tmp_path, passed), ONE_WRITE, planted(twins=False))
    assert alone.resolved
    disagree = judge_run(GO, ["x_test.go"], run(1), tmp_path, ONE_WRITE, planted(twins=False))
    assert (
        not disagree.resolved and disagree.untrusted is not None and "shows no failure" in disagree.untrusted
    )
    go_report(tmp_path, {"TestReal": "pass", "TestOther": "fail"})
    lied = judge_run(GO, ["x_test.go"], run(0), tmp_path, ONE_WRITE, planted(twins=False))
    assert lied.tampered is not None and "TestOther did not pass" in lied.tampered


def test_skipped_and_missing_tests_do_not_pass(tmp_path: Path) -> None:
    outcomes = {"TestReal": "skip", "TestTwin": "fail"}  # TestOther never reported
    verdict = judge_run(GO, ["x_test.go"], run(1), go_report(tmp_path, outcomes), ONE_WRITE, planted())
    assert not verdict.resolved and verdict.tampered is None and verdict.untrusted is None
    assert verdict.statuses == {"TestReal": TestStatus.SKIPPED, "TestOther": TestStatus.MISSING}
    assert verdict.failing == ["TestReal", "TestOther"]


def test_an_abnormal_exit_status_is_not_resolved(tmp_path: Path) -> None:
    verdict = judge_run(GO, ["x_test.go"], run(137), go_report(tmp_path, HONEST), ONE_WRITE, planted())
    assert not verdict.resolved and verdict.untrusted == "the test runner ended abnormally (exit code 137)"


def test_each_runners_report_is_read(tmp_path: Path) -> None:
    libtest = tmp_path / "libtest.json"
    libtest.write_text(
        '{ "type": "suite", "event": "started", "test_count": 2 }\nnoise from the code\n'
        '{ "type": "test", "name": "a", "event": "ok" }\n'
        '{ "type": "test", "name": "b", "event": "ignored" }\n'
    )
    assert read_report("rust", [libtest]).statuses == {"a": TestStatus.PASSED, "b": TestStatus.SKIPPED}
    junit = tmp_path / "junit.xml"
    junit.write_text(
        '<testsuite><testcase name="zero()" classname="T"/><testcase name="many()" classname="T">'
        '<failure/></testcase><testcase name="off()"><skipped/></testcase></testsuite>'
    )
    assert read_report("java", [junit]).statuses == {
        "zero": TestStatus.PASSED,
        "many": TestStatus.FAILED,
        "off": TestStatus.SKIPPED,
    }
    jest = tmp_path / "jest.json"
    results = [{"title": "a", "status": "passed"}, {"title": "b", "status": "pending"}]
    jest.write_text(json.dumps({"testResults": [{"assertionResults": results}]}))
    assert read_report("javascript", [jest]).statuses == {"a": TestStatus.PASSED, "b": TestStatus.SKIPPED}
    catch = tmp_path / "catch.xml"
    catch.write_text(
        '<Catch><Group><TestCase name="a b"><OverallResult success="true"/></TestCase>'
        '<TestCase name="c"><OverallResult success="false"/></TestCase><TestCase name="d"/></Group></Catch>'
    )
    assert read_report("cpp", [catch]).statuses == {
        "a b": TestStatus.PASSED,
        "c": TestStatus.FAILED,
        "d": TestStatus.ERROR,
    }


def test_reports_that_cannot_be_trusted_to_read_are_refused(tmp_path: Path) -> None:
    entity = tmp_path / "entity.xml"
    entity.write_text('<!DOCTYPE x [<!ENTITY a "b">]><testsuite/>')
    with pytest.raises(ReportUnreadable, match="DOCTYPE"):
        read_report("java", [entity])
    link = tmp_path / "link.json"
    link.symlink_to("/etc/passwd")
    with pytest.raises(ReportUnreadable, match="was not written"):
        read_report("javascript", [link])
    with pytest.raises(ReportUnreadable, match="not JSON"):
        (tmp_path / "bad.json").write_text("{")
        read_report("javascript", [tmp_path / "bad.json"])


def test_only_a_test_the_file_skips_itself_may_be_reported_skipped(tmp_path: Path) -> None:
    shipped_skip = planted()
    shipped_skip.skipped = {"TestOther"}
    outcomes = {"TestReal": "pass", "TestTwin": "fail", "TestOther": "skip"}
    verdict = judge_run(GO, ["x_test.go"], run(1), go_report(tmp_path, outcomes), ONE_WRITE, shipped_skip)
    assert verdict.resolved and verdict.statuses["TestOther"] is TestStatus.SKIPPED
    # Skipped at run time (the code under test aborted it): not passed.
    outcomes = {"TestReal": "skip", "TestTwin": "fail", "TestOther": "skip"}
    verdict = judge_run(GO, ["x_test.go"], run(1), go_report(tmp_path, outcomes), ONE_WRITE, shipped_skip)
    assert not verdict.resolved and verdict.failing == ["TestReal"]


def test_a_skipped_test_outside_the_exercises_test_files_is_no_failure(tmp_path: Path) -> None:
    outcomes = {**HONEST, "TestHelper": "skip"}  # e.g. Java's other test class, still @Disabled
    verdict = judge_run(GO, ["x_test.go"], run(1), go_report(tmp_path, outcomes), ONE_WRITE, planted())
    assert verdict.resolved
    outcomes = {**HONEST, "TestHelper": "fail"}  # but it must not fail
    verdict = judge_run(GO, ["x_test.go"], run(1), go_report(tmp_path, outcomes), ONE_WRITE, planted())
    assert not verdict.resolved and verdict.failing == ["TestHelper"]


def test_a_twin_missing_with_real_tests_is_a_run_cut_short(tmp_path: Path) -> None:
    # A panic in TestReal ends the Go test binary: the twin and TestOther (after it) never run.
    outcomes = {"TestReal": "fail"}
    verdict = judge_run(GO, ["x_test.go"], run(1), go_report(tmp_path, outcomes), ONE_WRITE, planted())
    assert not verdict.resolved and verdict.tampered is None and verdict.untrusted is None
    assert verdict.failing == ["TestReal", "TestOther"]
