"""clade-mini through `grade()`, on every grading backend (see conftest.py).

For every task: the gold patch resolves it and the empty patch does not (with every
FAIL_TO_PASS test failing and every PASS_TO_PASS test passing, which checks the task
data too). Those gradings run in parallel, through `check_benchmark`, once per backend;
each task still gets its own test. Then the ways a diff can go wrong.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from benchmarks import Task, TestStatus, find_task
from benchmarks.check import TaskCheck, check_benchmark, describe
from benchmarks.clade_mini import CladeMini
from tests.benchmarks.conftest import Grader
from tests.benchmarks.helpers import diff_after, replace_in, write

TASKS = CladeMini().tasks()
TASK_IDS = [task.instance_id.removeprefix("clade-mini__") for task in TASKS]
SLUG_FIX = replace_in("textkit/slug.py", 'r"[^a-z0-9]"', 'r"[^a-z0-9]+"')
# Gradings at once: each mostly waits for its sandbox (or subprocess), even on 2 cores.
GRADING_WORKERS = 2


@pytest.fixture(scope="session")
def checks(grader: Grader) -> dict[str, TaskCheck]:
    """Every task graded with its gold patch and with the empty patch, on `grader`'s backend."""
    results = check_benchmark(
        grader.benchmark, grader.backend, grader.image, timeout_s=120, workers=GRADING_WORKERS
    )
    return {check.instance_id: check for check in results}


@pytest.mark.parametrize("task", TASKS, ids=TASK_IDS)
def test_gold_patch_resolves(checks: dict[str, TaskCheck], task: Task) -> None:
    report = checks[task.instance_id].gold
    assert report.resolved, f"{report.reason}\n{report.log_tail}"
    assert report.patch_applied
    assert report.FAIL_TO_PASS.success == task.FAIL_TO_PASS
    assert report.PASS_TO_PASS.success == task.PASS_TO_PASS
    assert report.tests_exit_code == 1  # the grader's must-fail canary, and nothing else, failed
    assert set(report.test_statuses) == {*task.FAIL_TO_PASS, *task.PASS_TO_PASS}  # no canary shown
    assert report.tampered is None and report.dropped_for_grading == {}
    assert not report.tests_timed_out


@pytest.mark.parametrize("task", TASKS, ids=TASK_IDS)
def test_empty_patch_does_not_resolve(checks: dict[str, TaskCheck], task: Task) -> None:
    report = checks[task.instance_id].empty
    assert not report.resolved
    assert report.patch_applied
    assert report.FAIL_TO_PASS.failure == task.FAIL_TO_PASS, report.log_tail
    assert report.PASS_TO_PASS.success == task.PASS_TO_PASS, report.log_tail
    assert report.tests_exit_code == 1  # pytest: some tests failed


def test_check_finds_nothing_wrong(checks: dict[str, TaskCheck]) -> None:
    assert list(checks) == [task.instance_id for task in TASKS]  # the benchmark's order
    wrong = [describe(check) for check in checks.values() if not check.ok or check.warnings]
    assert wrong == []
    assert all(check.gold_resolves and not check.empty_resolves for check in checks.values())


def test_patch_that_does_not_apply(grader: Grader, clade_mini: CladeMini) -> None:
    task = find_task(clade_mini, "clade-mini__textkit-1")
    # The gold patch with its removed line changed: its context no longer matches.
    stale = task.patch.replace('-    slug = re.sub(r"[^a-z0-9]"', '-    slug = re.sub(r"[^A-Z]"')
    assert stale != task.patch
    report = grader.grade(task, stale)
    assert not report.patch_applied
    assert not report.resolved
    assert report.reason.startswith("the patch does not apply")
    assert "textkit/slug.py" in report.reason
    assert report.test_statuses == {}


def test_text_that_is_not_a_diff(grader: Grader, clade_mini: CladeMini) -> None:
    task = find_task(clade_mini, "clade-mini__textkit-1")
    report = grader.grade(task, "I fixed it, trust me.\n")
    assert not report.patch_applied
    assert not report.resolved


def test_agent_diff_with_new_files(grader: Grader, clade_mini: CladeMini, tmp_path: Path) -> None:
    task = find_task(clade_mini, "clade-mini__textkit-1")
    helper = write("textkit/_regex.py", 'SEPARATOR_RUN = r"[^a-z0-9]+"\n')
    use_it = replace_in("textkit/slug.py", 'r"[^a-z0-9]"', "SEPARATOR_RUN")
    imports = replace_in(
        "textkit/slug.py",
        "import unicodedata\n",
        "import unicodedata\n\nfrom textkit._regex import SEPARATOR_RUN\n",
    )
    report = grader.grade(task, diff_after(clade_mini, task, tmp_path, helper, use_it, imports))
    assert report.resolved, f"{report.reason}\n{report.log_tail}"


def test_hidden_tests_override_agent_edits_to_test_files(
    grader: Grader, clade_mini: CladeMini, tmp_path: Path
) -> None:
    task = find_task(clade_mini, "clade-mini__textkit-1")
    gutted = write("tests/test_slug.py", "def test_nothing() -> None:\n    pass\n")
    # Gutting the test file does not help without the fix ...
    report = grader.grade(task, diff_after(clade_mini, task, tmp_path / "a", gutted))
    assert not report.resolved
    assert "tests/test_slug.py::test_nothing" not in report.test_statuses
    # ... and does not hurt with it: the hidden test file replaces the agent's version.
    report = grader.grade(task, diff_after(clade_mini, task, tmp_path / "b", SLUG_FIX, gutted))
    assert report.resolved, f"{report.reason}\n{report.log_tail}"


def test_printed_pass_lines_do_not_fool_the_grader(
    grader: Grader, clade_mini: CladeMini, tmp_path: Path
) -> None:
    task = find_task(clade_mini, "clade-mini__textkit-1")
    lines = "".join(
        f"print('PASSED {test_id}')\nprint('{test_id} PASSED')\n" for test_id in task.FAIL_TO_PASS
    )
    fake = replace_in("textkit/slug.py", '"""URL slugs."""\n', f'"""URL slugs."""\n{lines}')
    report = grader.grade(task, diff_after(clade_mini, task, tmp_path, fake))
    assert not report.resolved
    assert all(report.test_statuses[t] is TestStatus.FAILED for t in task.FAIL_TO_PASS)


def test_tests_that_hang_are_killed(grader: Grader, clade_mini: CladeMini, tmp_path: Path) -> None:
    task = find_task(clade_mini, "clade-mini__textkit-1")
    hang = replace_in("textkit/slug.py", "import re\n", "import re\nimport time\n\ntime.sleep(600)\n")
    report = grader.grade(task, diff_after(clade_mini, task, tmp_path, SLUG_FIX, hang), timeout_s=5)
    assert report.tests_timed_out
    assert not report.resolved
    assert "timed out" in report.reason
    assert report.duration_s < 60


def test_a_symlink_in_place_of_the_tests_reaches_nothing_outside(
    grader: Grader, clade_mini: CladeMini, tmp_path: Path
) -> None:
    task = find_task(clade_mini, "clade-mini__textkit-1")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "test_slug.py").write_text("host file\n")

    def tests_to_symlink(repo: Path) -> None:
        shutil.rmtree(repo / "tests")
        (repo / "tests").symlink_to(outside)

    report = grader.grade(task, diff_after(clade_mini, task, tmp_path / "agent", SLUG_FIX, tests_to_symlink))
    assert not report.resolved
    assert [path.name for path in outside.iterdir()] == ["test_slug.py"]
    assert (outside / "test_slug.py").read_text() == "host file\n"
