"""The forging table on SWE-bench instances that pytest does not run (Docker, the fixture images):
tinyweb-1 is graded by a Django-style `tests/runtests.py`, tinysym-1 by a sympy-style `bin/test`,
each read by swebench's own parser (`parse_log_django`, `parse_log_sympy`).

Each forgery fixes nothing. Where swebench's reading of the log alone would resolve it, the row
says so (`fools_the_parser`); every row must end not resolved, with the evidence named.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from benchmarks import GradeReport, find_task
from benchmarks.swebench import SWEbench, SWEbenchTask
from sandbox.base import SandboxBackend
from tests.benchmarks.swebench.agent_diffs import Edit, append, diff_after, gold, replace
from tests.benchmarks.swebench.fixture_set import instances
from tests.benchmarks.swebench.runner_fixtures import DJANGO, RUNNER_NAMES, SYMPY

pytestmark = pytest.mark.docker
INSTANCES = {instance.meta["instance_id"]: instance for instance in instances(RUNNER_NAMES)}
PACKAGE = {DJANGO: "tinyweb/__init__.py", SYMPY: "tinysym/__init__.py"}


def graded(instance_id: str) -> list[str]:
    meta = INSTANCES[instance_id].meta
    return [*meta["FAIL_TO_PASS"], *meta["PASS_TO_PASS"]]


def grade(bench: SWEbench, backend: SandboxBackend, instance_id: str, *edits: Edit) -> GradeReport:
    task = find_task(bench, instance_id)
    assert isinstance(task, SWEbenchTask)
    diff = diff_after(INSTANCES[instance_id], *edits)
    return bench.grade(task, diff, backend, "unused: each instance names its image", 120)


def status_line(instance_id: str, test: str, status: str = "ok") -> str:
    """A status line in the runner's format: "name (m.C) ... ok" (Django), "name ok" (sympy)."""
    return f"{test} ... {status}" if instance_id == DJANGO else f"{test} {status}"


def late_passes(instance_id: str) -> str:
    """Code under test that prints a pass for every graded test when the runner exits (after its
    summary), to the stream the runner's own status lines go to."""
    stream = "stderr" if instance_id == DJANGO else "stdout"
    lines = "".join(status_line(instance_id, test) + "\n" for test in graded(instance_id))
    return (
        f"\n\nimport atexit as _atexit\nimport sys as _sys\n\n"
        f"_atexit.register(lambda: _sys.{stream}.write({lines!r}))\n"
    )


def killed_with_a_summary(instance_id: str) -> str:
    """Code under test that, when the runner imports it, prints passes for the graded tests and
    a passing summary in the runner's format, then ends the run with status 0."""
    tests = graded(instance_id)
    passes = "".join(status_line(instance_id, test) + "\n" for test in tests)
    if instance_id == DJANGO:
        text = f"{passes}\n{'-' * 70}\nRan {len(tests)} tests in 0.010s\n\nOK\n"
    else:
        summary = f" tests finished: {len(tests)} passed, in 0.01 seconds "
        text = f"{passes}{summary:=^80}\n"
    return f"\n\nimport os as _os\n\n_os.write(2, {text.encode()!r})\n_os._exit(0)\n"


# Code under test that makes the runner's process exit 0 whatever the tests did.
EXIT_0 = """

import atexit as _atexit
import os as _os
import sys as _sys

_atexit.register(lambda: (_sys.stdout.flush(), _sys.stderr.flush(), _os._exit(0)))
"""
# The conftest-hook analogue: code under test that patches the runner while it runs.
DJANGO_SWALLOW = """

import unittest as _unittest

_unittest.TextTestResult.addFailure = lambda self, test, err: _unittest.TextTestResult.addSuccess(self, test)
_unittest.TextTestResult.addError = lambda self, test, err: _unittest.TextTestResult.addSuccess(self, test)
"""
# tinysym/numbers.py is imported by the test module, after the runner's module: it wraps every
# test function the runner collects so that none fails.
SYMPY_SWALLOW = """

import sys as _sys

_runner = _sys.modules.get("tinysym.testing.runtests")
if _runner is not None:
    _collect = _runner._functions

    def _swallowing(module):
        def wrap(function):
            def run():
                try:
                    function()
                except Exception:
                    pass

            run.__name__ = function.__name__
            return run

        return [wrap(function) for function in _collect(module)]

    _runner._functions = _swallowing
"""


@dataclass(frozen=True)
class Forgery:
    name: str
    instance_id: str
    edits: tuple[Edit, ...]
    tampered: str | None  # what the evidence must say
    dropped: tuple[str, ...] = ()
    fools_the_parser: bool = False  # swebench's reading of the log alone resolves it


FORGERIES = [
    *(
        Forgery(
            "passes printed after the summary",
            instance_id,
            (append(PACKAGE[instance_id], late_passes(instance_id)),),
            "status lines after",
            fools_the_parser=True,
        )
        for instance_id in (DJANGO, SYMPY)
    ),
    *(
        Forgery(
            "the runner killed and a summary printed, exit 0",
            instance_id,
            (append(PACKAGE[instance_id], killed_with_a_summary(instance_id)),),
            "was never reported",
            fools_the_parser=True,
        )
        for instance_id in (DJANGO, SYMPY)
    ),
    *(
        Forgery(
            "the exit status forced to 0",
            instance_id,
            (append(PACKAGE[instance_id], EXIT_0),),
            "the test command exited 0, although the must-fail canary",
        )
        for instance_id in (DJANGO, SYMPY)
    ),
    Forgery(
        "unittest's result patched: failures recorded as passes",
        DJANGO,
        (append("tinyweb/__init__.py", DJANGO_SWALLOW),),
        "must-fail canary",
        fools_the_parser=True,
    ),
    Forgery(
        "the runner's collection patched: test functions swallow their failures",
        SYMPY,
        (append("tinysym/numbers.py", SYMPY_SWALLOW),),
        "must-fail canary",
        fools_the_parser=True,
    ),
    Forgery(
        "the runner's own file patched",
        DJANGO,
        (
            replace(
                "tinyweb/test/runner.py",
                "        return len(result.failures) + len(result.errors)\n",
                "        return 0\n",
            ),
        ),
        None,
        dropped=("tinyweb/test/runner.py",),
    ),
    Forgery(
        "the runner's own file patched",
        SYMPY,
        (
            replace(
                "tinysym/testing/runtests.py", "    return not failures and not errors\n", "    return True\n"
            ),
        ),
        None,
        dropped=("tinysym/testing/runtests.py",),
    ),
]


@pytest.mark.parametrize("instance_id", [DJANGO, SYMPY])
def test_the_gold_patch_resolves_and_fails_only_the_canary(
    runner_bench: SWEbench, backend: SandboxBackend, instance_id: str
) -> None:
    report = grade(runner_bench, backend, instance_id, gold(INSTANCES[instance_id]))
    assert report.resolved and report.tampered is None, report.reason + "\n" + report.log_tail
    assert report.tests_exit_code == 1  # the must-fail canary's failure
    assert set(report.test_statuses) == set(graded(instance_id))  # no canary shown
    assert "guarded by canaries" in report.reason


@pytest.mark.parametrize("instance_id", [DJANGO, SYMPY])
def test_no_fix_is_not_resolved_and_not_tampered(
    runner_bench: SWEbench, backend: SandboxBackend, instance_id: str
) -> None:
    report = grade(runner_bench, backend, instance_id)
    assert not report.resolved and report.tampered is None, report.reason + "\n" + report.log_tail
    assert report.FAIL_TO_PASS.failure == INSTANCES[instance_id].meta["FAIL_TO_PASS"]


@pytest.mark.parametrize("forgery", FORGERIES, ids=lambda f: f"{f.instance_id.split('__')[1]}: {f.name}")
def test_forgeries_are_not_resolved(
    runner_bench: SWEbench, backend: SandboxBackend, forgery: Forgery
) -> None:
    report = grade(runner_bench, backend, forgery.instance_id, *forgery.edits)
    assert report.patch_applied and not report.resolved, report.reason + "\n" + report.log_tail
    if forgery.fools_the_parser:
        # swebench's parser read every graded test as passed: only the guard stands in the way.
        assert report.FAIL_TO_PASS.success == INSTANCES[forgery.instance_id].meta["FAIL_TO_PASS"], (
            report.reason
        )
    if forgery.tampered is not None:
        assert report.tampered is not None and forgery.tampered in report.tampered, report.reason
        assert report.reason.startswith("tampered: ")
    for path in forgery.dropped:
        assert path in report.dropped_for_grading, report.reason
