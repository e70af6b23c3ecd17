"""The same recorded test logs, read by Clade's grading and by the swebench package itself.

Clade's side is `grading.verdict` on a task built from the dataset row; the package's side
is built here independently: its own `make_test_spec` on the same row and its own
`get_eval_report`. A run that timed out is never resolved on either side (the harness
raises before it grades one). Each log's expected verdict per swebench major version
is in fixtures/logs/cases.json, with why.
"""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest

from benchmarks import TestStatus
from benchmarks.swebench import Harness
from benchmarks.swebench.grading import verdict
from benchmarks.swebench.tasks import to_task
from tests.benchmarks.swebench.fixture_set import instances
from tests.benchmarks.swebench.log_cases import LogCase, log_cases

IDS = {instance.name: instance.meta["instance_id"] for instance in instances()}


def official_report(harness: Harness, row: dict[str, Any], case: LogCase) -> dict[str, Any]:
    """What the swebench harness reports on this log, by its own functions only."""
    if harness.major == 5:
        test_spec = importlib.import_module("swebench.harness.utils").make_test_spec(row)
    else:
        test_spec = importlib.import_module("swebench.harness.test_spec.test_spec").make_test_spec(row)
    grading = importlib.import_module("swebench.harness.grading")
    prediction = {"instance_id": row["instance_id"], "model_name_or_path": "clade", "model_patch": ""}
    reports = grading.get_eval_report(test_spec, prediction, str(case.log_file), True)
    report: dict[str, Any] = reports[row["instance_id"]]
    return report


@pytest.mark.parametrize("case", log_cases(), ids=lambda case: case.name)
def test_clade_and_swebench_agree(
    case: LogCase, harness: Harness, offline_rows: list[dict[str, Any]]
) -> None:
    row = dict(next(row for row in offline_rows if row["instance_id"] == IDS[case.instance]))
    if case.extra_fail_to_pass:
        row["FAIL_TO_PASS"] = json.dumps([*json.loads(row["FAIL_TO_PASS"]), *case.extra_fail_to_pass])
    task = to_task(row, harness)

    clade = verdict(task, harness, case.log_file, model_patch="", timed_out=case.timed_out)
    official = official_report(harness, row, case)
    official_resolved = bool(official["resolved"]) and not case.timed_out

    assert clade.resolved == official_resolved == case.resolved[str(harness.major)], case.why
    groups = official.get("tests_status")
    if groups is not None:
        for name, group in (("FAIL_TO_PASS", clade.FAIL_TO_PASS), ("PASS_TO_PASS", clade.PASS_TO_PASS)):
            assert group.success == groups[name]["success"]
            assert group.failure == groups[name]["failure"]
    else:  # no gradable log: every graded test failed, and the statuses say why
        assert clade.FAIL_TO_PASS.failure == task.FAIL_TO_PASS
        assert not clade.FAIL_TO_PASS.success and not clade.PASS_TO_PASS.success


@pytest.mark.parametrize(
    ("name", "test", "status"),
    [
        ("empty", "tests/test_stock.py::test_removing_more_than_in_stock_raises", TestStatus.FAILED),
        ("empty", "tests/test_stock.py::test_counts_must_be_positive[-2]", TestStatus.PASSED),
        ("gold-parametrized", "tests/test_wrap.py::test_full_lines_are_kept_whole[19]", TestStatus.PASSED),
        ("missing-tests", "tests/test_wrap.py", TestStatus.ERROR),
    ],
)
def test_statuses_in_the_report(
    name: str, test: str, status: TestStatus, harness: Harness, offline_rows: list[dict[str, Any]]
) -> None:
    case = next(case for case in log_cases() if case.name == name)
    row = next(row for row in offline_rows if row["instance_id"] == IDS[case.instance])
    report = verdict(to_task(row, harness), harness, case.log_file, model_patch="")
    assert report.test_statuses[test] == status
