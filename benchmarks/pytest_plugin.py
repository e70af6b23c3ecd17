"""Pytest plugin that Clade's grader loads inside the grading sandbox.

It records each test's outcome by node id from pytest's own reports and writes them
as JSON, once, to `$CLADE_RESULTS_FILE` when the session ends, with the session's exit
status and the grading's nonce (from the file `$CLADE_GRADING_FILE` names, read when
pytest loads this plugin: before any conftest or test module, hence before the code
under test). Outcomes never come from the test
output, so a test that prints "PASSED some_test" cannot fake one. The grader loads this
file with `-p` from a read-only folder; it imports nothing from Clade and must run on
any pytest and any Python 3 the task's image has (hence no f-strings, no evaluated
annotations). What it cannot defend against alone, and what the grader checks around it:
see `pytest_grading.py`.

With `$CLADE_RESULTS_SESSIONS` set (SWE-bench eval scripts may run pytest more than
once), a session that finds the results file taken writes `results.2.json`, then
`results.3.json`, ...; otherwise a taken results file is an error, and the evidence.
"""

import json
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

RESULTS_VERSION = 2
MAX_SESSIONS = 50
# When one test yields several reports (call, then teardown), the worst one wins.
_RANK = {"PASSED": 0, "XFAIL": 1, "SKIPPED": 2, "FAILED": 3, "ERROR": 4}
_outcomes = {}  # type: dict[str, str]


def _grading() -> "dict[str, str]":
    path, results = os.environ.get("CLADE_GRADING_FILE"), os.environ.get("CLADE_RESULTS_FILE")
    if not path or not results:
        return {}
    with open(path, encoding="utf-8") as source:
        data = json.load(source)
    return {"nonce": str(data["nonce"]), "results": results}


_GRADING = _grading()


def _record(nodeid: str, status: str) -> None:
    previous = _outcomes.get(nodeid)
    if previous is None or _RANK[status] > _RANK[previous]:
        _outcomes[nodeid] = status


def pytest_runtest_logreport(report: "pytest.TestReport") -> None:
    expected_failure = hasattr(report, "wasxfail")
    if report.when == "call":
        if report.passed:
            _record(report.nodeid, "PASSED")  # includes a non-strict unexpected pass
        elif report.skipped:
            _record(report.nodeid, "XFAIL" if expected_failure else "SKIPPED")
        else:
            _record(report.nodeid, "FAILED")
    elif report.failed:  # setup or teardown broke
        _record(report.nodeid, "ERROR")
    elif report.skipped:  # skip and xfail(run=False) marks act during setup
        _record(report.nodeid, "XFAIL" if expected_failure else "SKIPPED")


def pytest_collectreport(report: "pytest.CollectReport") -> None:
    if report.failed:  # e.g. a test module that does not import
        _record(report.nodeid, "ERROR")


def pytest_sessionfinish(session: "pytest.Session", exitstatus: int) -> None:
    if not _GRADING:
        return
    data = {
        "version": RESULTS_VERSION,
        "nonce": _GRADING["nonce"],
        "exit_status": int(exitstatus),
        "tests": _outcomes,
    }
    # "x": created once; a file already there is someone else's, and stays the evidence.
    path = _GRADING["results"]
    sessions = MAX_SESSIONS if os.environ.get("CLADE_RESULTS_SESSIONS") else 1
    for number in range(1, sessions + 1):
        name = path if number == 1 else path[: -len(".json")] + "." + str(number) + ".json"
        if number < sessions and os.path.lexists(name):
            continue
        with open(name, "x", encoding="utf-8") as out:
            json.dump(data, out)
        return
