"""Agents that fix nothing and patch pytest's runner at import time instead (`runner_payloads.py`),
graded for real (Docker, the base image) on clade-mini, the folder benchmark and Polyglot's
Python: the must-fail twins of real hidden tests give them away, and the diff is flagged."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import GradeReport, Task, find_task
from benchmarks.clade_mini import CladeMini
from benchmarks.folder import FolderBenchmark
from benchmarks.gitops import git_ok
from benchmarks.polyglot import Polyglot
from sandbox.base import SandboxBackend
from tests.benchmarks.helpers import Edit, diff_after
from tests.benchmarks.polyglot.layouts import agent_diff
from tests.benchmarks.runner_payloads import (
    FAIL_THE_PERTURBED_COPIES,
    SWALLOW_A_RANDOM_HALF,
    SWALLOW_UNLESS_ARITHMETIC,
)

pytestmark = pytest.mark.docker

FOLDER_FIXTURE = Path(__file__).with_name("folder_fixture")


def append(path: str, code: str) -> Edit:
    def edit(repo: Path) -> None:
        target = repo / path
        target.write_text(target.read_text() + code)

    return edit


def assert_caught(report: GradeReport, flagged: str) -> None:
    assert report.patch_applied and not report.resolved, report.reason
    assert report.tampered is not None and "must-fail twin" in report.tampered, report.reason
    assert "and its original both passed" in report.tampered
    assert report.reason.startswith("tampered: ")
    # The diff reaches into pytest's internals from the code under test: flagged and shown.
    assert "_pytest" in report.runner_tampering[flagged]
    assert f"flagged: non-test code reaches into the test runner: {flagged}" in report.reason


def test_f1_is_caught_on_clade_mini(
    clade_mini: CladeMini, docker_backend: tuple[SandboxBackend, str], tmp_path: Path
) -> None:
    backend, image = docker_backend
    task = find_task(clade_mini, "clade-mini__ledger-1")
    diff = diff_after(clade_mini, task, tmp_path, append("ledger/__init__.py", SWALLOW_UNLESS_ARITHMETIC))
    report = clade_mini.grade(task, diff, backend, image, 120)
    assert_caught(report, "ledger/__init__.py")


def test_a_random_half_swallowed_is_not_resolved(
    clade_mini: CladeMini, docker_backend: tuple[SandboxBackend, str], tmp_path: Path
) -> None:
    """Each failing test passes by a coin flip. To be resolved, textkit-1's 3 FAIL_TO_PASS tests
    must all be swallowed and its 8 twins all spared: 1 chance in 2,048 that this test fails."""
    backend, image = docker_backend
    task = find_task(clade_mini, "clade-mini__textkit-1")
    diff = diff_after(clade_mini, task, tmp_path, append("textkit/__init__.py", SWALLOW_A_RANDOM_HALF))
    report = clade_mini.grade(task, diff, backend, image, 120)
    assert not report.resolved, report.reason
    assert report.tampered is not None or report.FAIL_TO_PASS.failure, report.reason


def test_f1_is_caught_on_the_folder_benchmark(
    docker_backend: tuple[SandboxBackend, str], tmp_path: Path
) -> None:
    backend, image = docker_backend
    bench = FolderBenchmark(path=FOLDER_FIXTURE)
    task = find_task(bench, "calc-1")
    repo = tmp_path / "agent"
    bench.prepare_repo(task, repo)
    (repo / "calc.py").write_text((repo / "calc.py").read_text() + SWALLOW_UNLESS_ARITHMETIC)
    git_ok(repo, "add", "--all")
    diff = git_ok(repo, "diff", "--cached")
    gold = bench.grade(task, task.patch, backend, image, 120)
    assert gold.resolved and gold.tampered is None, gold.reason
    assert_caught(bench.grade(task, diff, backend, image, 120), "calc.py")


def test_f1_is_caught_on_polyglot_python(docker_backend: tuple[SandboxBackend, str], tmp_path: Path) -> None:
    backend, image = docker_backend
    polyglot = Polyglot()
    task: Task = find_task(polyglot, "polyglot__python__tide-table")
    diff = agent_diff(polyglot, task, tmp_path, append("tide_table.py", SWALLOW_UNLESS_ARITHMETIC))
    report = polyglot.grade(task, diff, backend, image, 120)
    assert report.patch_applied and not report.resolved, report.reason
    assert report.tampered is not None and "must-fail twin" in report.tampered, report.reason
    assert report.reason.startswith("tampered: ")


def test_failing_only_the_copies_that_look_perturbed_is_not_resolved(
    clade_mini: CladeMini, docker_backend: tuple[SandboxBackend, str], tmp_path: Path
) -> None:
    """A payload that pairs each twin with its original and guesses which of the two is
    the twin: a coin flip per twin (ledger-1 gets 8), so 1 chance in 256 that this fails."""
    backend, image = docker_backend
    task = find_task(clade_mini, "clade-mini__ledger-1")
    diff = diff_after(clade_mini, task, tmp_path, append("ledger/__init__.py", FAIL_THE_PERTURBED_COPIES))
    report = clade_mini.grade(task, diff, backend, image, 120)
    assert not report.resolved, report.reason
    assert report.tampered is not None or report.FAIL_TO_PASS.failure or report.PASS_TO_PASS.failure
    assert "_pytest" in report.runner_tampering["ledger/__init__.py"]
