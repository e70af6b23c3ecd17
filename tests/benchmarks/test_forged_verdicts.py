"""An agent that fixes nothing and forges a pass instead is never resolved, and the evaluation says why.

Each case is one forging technique, written into the agent's diff for clade-mini's
textkit-1 and graded for real (Docker, the base image, the grader's plugin). Every
verdict must be "not resolved" with its evidence: the forging files listed as dropped
for grading, or a "tampered" verdict that names what gave the forgery away.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from benchmarks import GradeReport, Task, find_task
from benchmarks.clade_mini import CladeMini
from sandbox.base import SandboxBackend
from tests.benchmarks.helpers import PATCH_PYTEST_REPORTS, Edit, diff_after, write
from tests.benchmarks.runner_payloads import SWALLOW_UNLESS_ARITHMETIC

pytestmark = pytest.mark.docker

TASK_ID = "clade-mini__textkit-1"
# A pytest plugin that turns every test's report into a pass.
FORGING_PLUGIN = """
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
    report.longrepr = None
"""
PATCH_GRADER_PLUGIN = """
import sys as _sys

_plugin = _sys.modules.get("clade_results_plugin")
if _plugin is not None:
    _record = _plugin._record
    _plugin._record = lambda nodeid, status: _record(nodeid, "PASSED")
"""
REWRITE_AT_EXIT = """
import atexit as _atexit
import json as _json
import os as _os


def _forge():
    path = _os.environ["CLADE_RESULTS_FILE"]
    with open(path) as source:
        data = _json.load(source)
    data["tests"] = {test: "PASSED" for test in data["tests"]}
    with open(path, "w") as out:
        _json.dump(data, out)


_atexit.register(_forge)
"""
REWRITE_FROM_A_LEFTOVER_PROCESS = """
import json as _json
import os as _os
import time as _time


def _forge():
    path = _os.environ["CLADE_RESULTS_FILE"]
    if _os.fork() != 0:
        return
    _os.setsid()
    null = _os.open(_os.devnull, _os.O_RDWR)
    for fd in (0, 1, 2):
        _os.dup2(null, fd)
    deadline = _time.monotonic() + 30
    while _time.monotonic() < deadline:
        try:
            with open(path) as source:
                data = _json.load(source)
        except (OSError, ValueError):
            _time.sleep(0.001)
            continue
        data["tests"] = {test: "PASSED" for test in data["tests"]}
        with open(path, "w") as out:
            _json.dump(data, out)
        break
    _os._exit(0)


_forge()
"""
PRINT_PASSED_AND_EXIT = """
import os as _os

for _test in {tests!r}:
    print("PASSED", _test)
    print(_test, "PASSED")
print("==================== {count} passed in 0.10s ====================", flush=True)
_os._exit(0)
"""
PLANT_RESULTS_FIRST = """
import json as _json
import os as _os

with open(_os.environ["CLADE_GRADING_FILE"]) as _source:
    _nonce = _json.load(_source)["nonce"]
_forged = {{"version": 2, "nonce": _nonce, "exit_status": 1, "tests": {{t: "PASSED" for t in {tests!r}}}}}
with open(_os.environ["CLADE_RESULTS_FILE"], "w") as _out:
    _json.dump(_forged, _out)
"""


@dataclass(frozen=True)
class Forgery:
    edits: tuple[Edit, ...]
    dropped: tuple[str, ...] = ()  # the paths the evaluation must list as dropped for grading
    tampered: str | None = None  # what the tampered evidence must say


def append_to_package(code: str) -> Edit:
    def edit(repo: Path) -> None:
        path = repo / "textkit" / "__init__.py"
        path.write_text(path.read_text() + textwrap.dedent(code))

    return edit


def forgeries(task: Task) -> dict[str, Forgery]:
    tests = [*task.FAIL_TO_PASS, *task.PASS_TO_PASS]
    return {
        # (a) conftest.py hooks rewriting every report, at the root and next to the tests.
        "conftest-hooks": Forgery((write("conftest.py", FORGING_PLUGIN),), dropped=("conftest.py",)),
        "nested-conftest": Forgery(
            (write("tests/conftest.py", FORGING_PLUGIN),), dropped=("tests/conftest.py",)
        ),
        # (b) a plugin loaded through package entry points, or through `-p` in pytest's settings.
        "entry-point-plugin": Forgery(
            (
                write("forge_plugin.py", FORGING_PLUGIN),
                write("forge.egg-info/PKG-INFO", "Metadata-Version: 2.1\nName: forge\nVersion: 1.0\n"),
                write("forge.egg-info/entry_points.txt", "[pytest11]\nforge = forge_plugin\n"),
            ),
            dropped=("forge.egg-info/PKG-INFO", "forge.egg-info/entry_points.txt"),
        ),
        "pyproject-addopts": Forgery(
            (
                write("forge_plugin.py", FORGING_PLUGIN),
                append_file("pyproject.toml", 'addopts = "-p forge_plugin"\n'),
            ),
            dropped=("pyproject.toml",),
        ),
        "pytest-ini-addopts": Forgery(
            (
                write("forge_plugin.py", FORGING_PLUGIN),
                write("pytest.ini", "[pytest]\naddopts = -p forge_plugin\n"),
            ),
            dropped=("pytest.ini",),
        ),
        # (c) a .pth file and (d) sitecustomize: code run when the interpreter starts.
        "pth-file": Forgery(
            (write("forge_plugin.py", FORGING_PLUGIN), write("forge.pth", "import forge_plugin\n")),
            dropped=("forge.pth",),
        ),
        "sitecustomize": Forgery(
            (write("sitecustomize.py", PATCH_PYTEST_REPORTS),), dropped=("sitecustomize.py",)
        ),
        # A module shadowing the test runner itself.
        "shadow-pytest": Forgery(
            (write("pytest.py", PRINT_PASSED_AND_EXIT.format(tests=tests, count=len(tests))),),
            dropped=("pytest.py",),
        ),
        # (e) the code under test patching pytest's reporting, or the grader's plugin, at import.
        "patch-pytest-reports": Forgery(
            (append_to_package(PATCH_PYTEST_REPORTS),), tampered="the test runner exited 0"
        ),
        "patch-grader-plugin": Forgery((append_to_package(PATCH_GRADER_PLUGIN),), tampered="must-fail twin"),
        # (f) editing the results file after the plugin wrote it, at exit or from a leftover process.
        "rewrite-results-at-exit": Forgery(
            (append_to_package(REWRITE_AT_EXIT),),
            tampered="the results file was created 1 and written 2 times",
        ),
        "rewrite-results-later": Forgery(
            (append_to_package(REWRITE_FROM_A_LEFTOVER_PROCESS),), tampered="written 2 times"
        ),
        # Writing the results file (with the nonce) before the plugin does: it lacks the twins.
        "plant-results-first": Forgery(
            (append_to_package(PLANT_RESULTS_FIRST.format(tests=tests)),), tampered="never reported"
        ),
        # F1: pytest's own Function.runtest replaced, every test but literal arithmetic (the old
        # canaries) swallowing its exception: pytest itself reports them PASSED.
        "swallow-unless-arithmetic": Forgery(
            (append_to_package(SWALLOW_UNLESS_ARITHMETIC),), tampered="and its original both passed"
        ),
        # (g) printing PASSED for every test, then ending the runner with exit status 0.
        "print-passed-and-exit": Forgery(
            (append_to_package(PRINT_PASSED_AND_EXIT.format(tests=tests, count=len(tests))),),
            tampered="exited 0 without writing its results",
        ),
    }


def append_file(path: str, text: str) -> Edit:
    def edit(repo: Path) -> None:
        target = repo / path
        target.write_text(target.read_text() + text)

    return edit


TECHNIQUES = list(forgeries(find_task(CladeMini(), TASK_ID)))


@pytest.fixture(scope="module")
def task(clade_mini: CladeMini) -> Task:
    return find_task(clade_mini, TASK_ID)


@pytest.mark.parametrize("technique", TECHNIQUES)
def test_a_forged_pass_is_caught(
    technique: str,
    task: Task,
    clade_mini: CladeMini,
    docker_backend: tuple[SandboxBackend, str],
    tmp_path: Path,
) -> None:
    forgery = forgeries(task)[technique]
    backend, image = docker_backend
    diff = diff_after(clade_mini, task, tmp_path, *forgery.edits)
    report: GradeReport = clade_mini.grade(task, diff, backend, image, 60)

    assert report.patch_applied and not report.resolved, report.reason
    for path in forgery.dropped:
        assert path in report.dropped_for_grading, report.dropped_for_grading
        assert path in report.reason
    if forgery.tampered is None:
        # The forging files were left out: an honest run of unfixed code, every FAIL_TO_PASS failing.
        assert report.tampered is None, report.tampered
        assert report.FAIL_TO_PASS.failure == task.FAIL_TO_PASS, report.log_tail
    else:
        assert report.tampered is not None and forgery.tampered in report.tampered, report.tampered
        assert report.reason.startswith("tampered: ")
