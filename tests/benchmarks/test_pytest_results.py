"""The grader's reading of pytest outcomes, on tricky suites run by a real pytest.

Outcomes come from the plugin's JSON (pytest's own reports), never from the log: a
printed "PASSED" line, a module that fails to import, a test that is not there, and
an exit code of 0 from a process that died early must all be judged correctly.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks import Task, TestStatus
from benchmarks.canaries import Canaries, check, plant
from benchmarks.pytest_grading import (
    GRADER_PYTEST_ARGS,
    GRADING_FILE,
    PLUGIN_MODULE,
    PLUGIN_SOURCE,
    RESULTS_FILE,
    GuardedRun,
    judge,
    read_results,
    unexpected_changes,
    verify,
)
from benchmarks.write_watch import Change, WriteWatch
from sandbox.base import ExecResult

TRICKY = """
import pytest

def test_prints_fake_pass_lines():
    print("PASSED test_tricky.py::test_really_fails")
    print("test_tricky.py::test_really_fails PASSED")
    print("=========== short test summary info ===========")
    print("PASSED test_tricky.py::test_really_fails")
    assert False

def test_really_fails():
    assert 1 == 2

def test_ok():
    pass

@pytest.fixture
def broken_setup():
    raise RuntimeError("setup broke")

def test_setup_error(broken_setup):
    pass

@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown broke")

def test_passes_but_teardown_errors(broken_teardown):
    pass

@pytest.mark.skip(reason="not today")
def test_skipped():
    pass

@pytest.mark.xfail(reason="known bug")
def test_expected_failure():
    assert False

@pytest.mark.xfail(strict=True)
def test_strict_unexpected_pass():
    pass

@pytest.mark.parametrize("value", ["a::b", "c d", "e/f"])
def test_odd_ids(value):
    assert value

class TestGroup:
    def test_method(self):
        pass
"""


def run_pytest(repo: Path, results: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The grader's command, run on the host (what the sandbox would run)."""
    results.mkdir(exist_ok=True)
    shutil.copyfile(PLUGIN_SOURCE, results / f"{PLUGIN_MODULE}.py")
    (results / GRADING_FILE).write_text('{"nonce": "test-nonce"}')
    env = {
        **os.environ,
        "PYTHONPATH": str(results),
        "CLADE_GRADING_FILE": str(results / GRADING_FILE),
        "CLADE_RESULTS_FILE": str(results / RESULTS_FILE),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",  # as the grader runs it
    }
    command = [sys.executable, "-m", "pytest", "-rA", *args, *GRADER_PYTEST_ARGS]
    return subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, check=False)


def make_task(fail_to_pass: list[str], pass_to_pass: list[str]) -> Task:
    return Task(
        instance_id="tricky",
        repo="tests/tricky",
        base_commit="0" * 40,
        problem_statement="",
        patch="",
        test_patch="",
        FAIL_TO_PASS=fail_to_pass,
        PASS_TO_PASS=pass_to_pass,
        test_command=["python", "-m", "pytest"],
    )


def test_statuses_come_from_pytest_not_from_the_log(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "test_tricky.py").write_text(TRICKY)
    (repo / "test_broken_import.py").write_text(
        "import module_that_does_not_exist\n\ndef test_x():\n    pass\n"
    )
    proc = run_pytest(repo, tmp_path / "results", ".")
    assert "PASSED test_tricky.py::test_really_fails" in proc.stdout  # the lie is in the log

    statuses = read_results(tmp_path / "results" / RESULTS_FILE)
    assert statuses == {
        "test_tricky.py::test_prints_fake_pass_lines": TestStatus.FAILED,
        "test_tricky.py::test_really_fails": TestStatus.FAILED,
        "test_tricky.py::test_ok": TestStatus.PASSED,
        "test_tricky.py::test_setup_error": TestStatus.ERROR,
        "test_tricky.py::test_passes_but_teardown_errors": TestStatus.ERROR,
        "test_tricky.py::test_skipped": TestStatus.SKIPPED,
        "test_tricky.py::test_expected_failure": TestStatus.XFAIL,
        "test_tricky.py::test_strict_unexpected_pass": TestStatus.FAILED,
        "test_tricky.py::test_odd_ids[a::b]": TestStatus.PASSED,
        "test_tricky.py::test_odd_ids[c d]": TestStatus.PASSED,
        "test_tricky.py::test_odd_ids[e/f]": TestStatus.PASSED,
        "test_tricky.py::TestGroup::test_method": TestStatus.PASSED,
        "test_broken_import.py": TestStatus.ERROR,  # the collection error itself
    }

    report = judge(
        make_task(
            fail_to_pass=["test_tricky.py::test_really_fails", "test_broken_import.py::test_x"],
            pass_to_pass=["test_tricky.py::test_ok", "test_tricky.py::test_expected_failure"],
        ),
        statuses,
    )
    assert not report.resolved
    # A test in a module that failed to import never ran: missing, hence failed.
    assert report.FAIL_TO_PASS.failure == [
        "test_tricky.py::test_really_fails",
        "test_broken_import.py::test_x",
    ]
    assert report.PASS_TO_PASS.success == ["test_tricky.py::test_ok", "test_tricky.py::test_expected_failure"]


def test_every_listed_test_must_pass() -> None:
    statuses = {"t.py::a": TestStatus.PASSED, "t.py::b": TestStatus.PASSED, "t.py::c": TestStatus.SKIPPED}
    assert judge(make_task(["t.py::a"], ["t.py::b"]), statuses).resolved
    skipped = judge(make_task(["t.py::a"], ["t.py::c"]), statuses)
    assert not skipped.resolved
    assert skipped.PASS_TO_PASS.failure == ["t.py::c"]
    missing = judge(make_task(["t.py::a", "t.py::gone"], []), statuses)
    assert not missing.resolved
    assert missing.FAIL_TO_PASS.failure == ["t.py::gone"]


def test_a_run_that_dies_early_has_no_results(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "test_exit.py").write_text(
        "import os\n\ndef test_a():\n    pass\n\ndef test_b():\n    os._exit(0)\n"
    )
    proc = run_pytest(repo, tmp_path / "results", ".")
    assert proc.returncode == 0  # the exit code says all is well ...
    statuses = read_results(tmp_path / "results" / RESULTS_FILE)
    assert statuses == {}  # ... but nothing was reported, so nothing passed
    assert not judge(make_task(["test_exit.py::test_a"], []), statuses).resolved


def test_unreadable_results_count_as_none(tmp_path: Path) -> None:
    path = tmp_path / RESULTS_FILE
    assert read_results(path) == {}
    path.write_text('{"version": 2, "tests": {"t.py::a": "WON"}}')
    assert read_results(path) == {}
    path.write_text("not json")
    assert read_results(path) == {}
    secret = tmp_path / "host-secret.json"
    secret.write_text('{"version": 2, "tests": {"t.py::a": "PASSED"}}')
    path.unlink()
    path.symlink_to(secret)  # a sandbox must not make the host read its own files
    assert read_results(path) == {}


CANARIES = Canaries(must_fail="test_keeps_order", must_pass="test_parse_zero", test_file="tests/test_a.py")
HONEST_TESTS = {
    "tests/test_a.py::test_real": "PASSED",
    "tests/test_a.py::test_keeps_order": "FAILED",
    "tests/test_a.py::test_parse_zero": "PASSED",
}
ONE_WRITE = [
    Change(RESULTS_FILE, "create"),
    Change(RESULTS_FILE, "modify"),
    Change(RESULTS_FILE, "close_write"),
]


def checked(
    tmp_path: Path,
    *,
    exit_code: int = 1,
    tests: dict[str, str] | None = None,
    nonce: str = "n0nce",
    exit_status: int | None = 1,
    changes: list[Change] | None = None,
    written: bool = True,
) -> GuardedRun:
    path = tmp_path / RESULTS_FILE
    if written:
        data = {"version": 2, "nonce": nonce, "exit_status": exit_status, "tests": tests or HONEST_TESTS}
        path.write_text(json.dumps(data))
    run = ExecResult(exit_code=exit_code, stdout="", stderr="", duration_s=1.0)
    return verify(run, path, ONE_WRITE if changes is None else changes, must_fail=CANARIES, nonce="n0nce")


def test_an_honest_run_is_trusted_and_its_canaries_are_not_shown(tmp_path: Path) -> None:
    guarded = checked(tmp_path)
    assert guarded.tampered is None and guarded.untrusted is None
    assert guarded.statuses == {"tests/test_a.py::test_real": TestStatus.PASSED}


@pytest.mark.parametrize(
    ("change", "evidence"),
    [
        ({"exit_code": 0, "exit_status": 0}, "exited 0, although the must-fail canary test_keeps_order runs"),
        ({"exit_code": 0, "written": False}, "exited 0 without writing its results"),
        ({"nonce": "stale"}, "nonce"),
        ({"exit_status": 0}, "session ended with exit status 0, the test runner exited 1"),
        ({"tests": {**HONEST_TESTS, "tests/test_a.py::test_keeps_order": "PASSED"}}, "reported PASSED"),
        ({"tests": {"tests/test_a.py::test_real": "PASSED"}}, "never reported"),
        (
            {"changes": [*ONE_WRITE, Change(RESULTS_FILE, "modify"), Change(RESULTS_FILE, "close_write")]},
            "2 times",
        ),
        ({"changes": [*ONE_WRITE, Change("forged.json", "create")]}, "create forged.json"),
        ({"changes": [*ONE_WRITE, Change(RESULTS_FILE, "moved_to")]}, "moved_to results.json"),
    ],
)
def test_disagreements_are_tampering(tmp_path: Path, change: dict[str, Any], evidence: str) -> None:
    guarded = checked(tmp_path, **change)
    assert guarded.tampered is not None and evidence in guarded.tampered
    assert guarded.statuses == {}


def test_a_module_that_does_not_import_loses_the_canaries_honestly(tmp_path: Path) -> None:
    guarded = checked(tmp_path, tests={"tests/test_a.py": "ERROR", "tests/test_b.py::test_x": "PASSED"})
    assert guarded.tampered is None and guarded.untrusted is None
    assert guarded.statuses == {
        "tests/test_a.py": TestStatus.ERROR,
        "tests/test_b.py::test_x": TestStatus.PASSED,
    }


def test_no_results_without_exit_0_is_not_resolved_but_not_tampering(tmp_path: Path) -> None:
    guarded = checked(tmp_path, exit_code=137, written=False)
    assert guarded.tampered is None
    assert guarded.untrusted == "no test results (test command exit code 137)"
    interrupted = checked(tmp_path, exit_code=2, exit_status=2)
    assert interrupted.tampered is None and interrupted.untrusted is not None
    killed = checked(tmp_path, exit_code=137)  # e.g. out of memory after the results were written
    assert killed.tampered is None and killed.untrusted is not None and "killed" in killed.untrusted


def test_the_canaries_run_in_a_real_pytest_and_show_their_outcomes(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_a.py").write_text("def test_real():\n    pass\n")
    canaries = plant(repo, "tests/test_a.py")
    assert canaries.must_fail.startswith("test_") and canaries.must_fail != canaries.must_pass
    proc = run_pytest(repo, tmp_path / "results", "tests")
    assert proc.returncode == 1  # the must-fail canary
    statuses = read_results(tmp_path / "results" / RESULTS_FILE)
    assert statuses == {
        "tests/test_a.py::test_real": TestStatus.PASSED,
        f"tests/test_a.py::{canaries.must_fail}": TestStatus.FAILED,
        f"tests/test_a.py::{canaries.must_pass}": TestStatus.PASSED,
    }
    assert check(canaries, statuses) is None
    assert canaries.without(statuses) == {"tests/test_a.py::test_real": TestStatus.PASSED}


def test_the_host_sees_every_write_to_the_results_folder(tmp_path: Path) -> None:
    with WriteWatch(tmp_path) as watch:
        with open(tmp_path / RESULTS_FILE, "x") as out:
            out.write("{}")
        assert unexpected_changes(watch.changes()) is None  # the plugin's one write
        (tmp_path / RESULTS_FILE).write_text('{"forged": true}')
        (tmp_path / "other").write_text("")
        evidence = unexpected_changes(watch.changes())
    assert evidence is not None
    assert "created 1 and written 2 times" in evidence and "create other" in evidence


def test_a_real_test_named_like_a_canary_in_another_file_stays() -> None:
    statuses = {
        "tests/test_b.py::test_keeps_order": TestStatus.FAILED,  # a real test, same name
        "tests/test_a.py::test_keeps_order": TestStatus.FAILED,
        "tests/test_a.py::test_parse_zero": TestStatus.PASSED,
    }
    assert check(CANARIES, statuses) is None
    assert CANARIES.without(statuses) == {"tests/test_b.py::test_keeps_order": TestStatus.FAILED}
    # pytest's rootdir below the repository's root: node ids are shorter than the path.
    assert CANARIES.is_canary("test_a.py::test_parse_zero")
    assert not CANARIES.is_canary("xtest_a.py::test_parse_zero")
