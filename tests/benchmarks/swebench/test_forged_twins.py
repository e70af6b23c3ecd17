"""SWE-bench pytest instances (the fixture set, in Docker): twins planted after the test patch,
pytest's structured report written into a watched mount, and forgeries that fool the log
parser alone caught."""

from __future__ import annotations

import re

import pytest

from benchmarks.swebench import SWEbench
from sandbox.base import SandboxBackend
from tests.benchmarks.runner_payloads import SWALLOW_UNLESS_ARITHMETIC, fake_second_session
from tests.benchmarks.swebench.agent_diffs import append, diff_after, gold
from tests.benchmarks.swebench.test_end_to_end import INSTANCES, grade

pytestmark = pytest.mark.docker
WRAPKIT = "clade-fixtures__wrapkit-1"


def test_the_gold_patch_fails_only_the_twins(bench: SWEbench, backend: SandboxBackend) -> None:
    wrapkit = INSTANCES[WRAPKIT]
    report = grade(bench, backend, WRAPKIT, diff_after(wrapkit, gold(wrapkit)))
    assert report.resolved and report.tampered is None, report.reason
    assert report.runner_tampering == {}
    graded = {*wrapkit.meta["FAIL_TO_PASS"], *wrapkit.meta["PASS_TO_PASS"]}
    failed = set(re.findall(r"^FAILED (\S+)", report.log_tail, re.MULTILINE))
    assert failed and not failed & graded  # the twins, under names of their own
    assert set(report.test_statuses) == graded  # no twin shown


def test_f1_patching_the_runner_is_caught(bench: SWEbench, backend: SandboxBackend) -> None:
    wrapkit = INSTANCES[WRAPKIT]
    diff = diff_after(wrapkit, append("wrapkit/__init__.py", SWALLOW_UNLESS_ARITHMETIC))
    report = grade(bench, backend, WRAPKIT, diff)
    assert not report.resolved, report.reason
    assert report.tampered is not None and "must-fail twin" in report.tampered, report.reason
    assert "_pytest" in report.runner_tampering["wrapkit/__init__.py"]


def test_f1b_a_fake_second_session_is_caught(bench: SWEbench, backend: SandboxBackend) -> None:
    """A second pytest session printed at exit passes the log's own checks, and swebench's parser
    keeps its PASSED lines; pytest's structured report says otherwise."""
    wrapkit = INSTANCES[WRAPKIT]
    tests = [*wrapkit.meta["FAIL_TO_PASS"], *wrapkit.meta["PASS_TO_PASS"]]
    diff = diff_after(wrapkit, append("wrapkit/__init__.py", fake_second_session(tests)))
    report = grade(bench, backend, WRAPKIT, diff)
    assert report.FAIL_TO_PASS.success == wrapkit.meta["FAIL_TO_PASS"]  # the log parser was fooled
    assert not report.resolved, report.reason
    assert report.tampered is not None, report.reason
    assert "pytest's own report says FAILED" in report.tampered
    assert "atexit" in report.runner_tampering["wrapkit/__init__.py"]
