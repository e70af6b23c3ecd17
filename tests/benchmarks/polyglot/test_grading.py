"""Grading polyglot tasks in real sandboxes: gold resolves, empty does not, edited tests do not help.

Like the rest of the benchmark suite, these fail (never skip) without a Docker engine.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks import GradeReport, Task, TestStatus, find_task
from benchmarks.polyglot import FIXTURES_DIR, Polyglot, ToolchainMissing, image_probe
from benchmarks.pytest_grading import GRADER_DIR, GRADER_PYTEST_ARGS, RESULTS_DIR
from sandbox.base import SandboxBackend, SandboxSpec
from tests.benchmarks.local_backend import IMAGE as LOCAL_IMAGE
from tests.benchmarks.local_backend import LocalBackend

from .layouts import agent_diff, delete, gold_solution, write, write_rust_exercise

FIXTURE_IDS = [
    f"polyglot__python__{path.name}"
    for path in sorted((FIXTURES_DIR / "python" / "exercises" / "practice").iterdir())
    if path.is_dir()
]
PASSING_TIDE_TESTS = "def test_nothing():\n    assert True\n"


@pytest.fixture(scope="module")
def polyglot() -> Polyglot:
    return Polyglot()


@pytest.fixture(scope="module")
def docker(docker_backend: tuple[SandboxBackend, str]) -> tuple[SandboxBackend, str]:
    return docker_backend


def grade(
    polyglot: Polyglot, docker: tuple[SandboxBackend, str], task: Task, diff: str, timeout_s: float = 60
) -> GradeReport:
    backend, image = docker
    return polyglot.grade(task, diff, backend, image, timeout_s)


@pytest.mark.docker
@pytest.mark.parametrize("instance_id", FIXTURE_IDS)
def test_gold_resolves_and_empty_does_not(
    polyglot: Polyglot, docker: tuple[SandboxBackend, str], instance_id: str
) -> None:
    task = find_task(polyglot, instance_id)
    gold = grade(polyglot, docker, task, task.patch)
    assert gold.resolved, gold.reason + "\n" + gold.log_tail
    # pytest exits 1 for the grader's must-fail twins, the only failures of an honest run.
    assert gold.patch_applied and gold.tests_exit_code == 1
    assert gold.tampered is None and gold.dropped_for_grading == {}
    assert gold.test_statuses == {task.FAIL_TO_PASS[0]: TestStatus.PASSED}
    assert gold.FAIL_TO_PASS.success == task.FAIL_TO_PASS
    assert "passed" in gold.log_tail

    empty = grade(polyglot, docker, task, "")
    assert not empty.resolved and empty.patch_applied
    assert empty.tests_exit_code not in (0, None)
    assert empty.FAIL_TO_PASS.failure == task.FAIL_TO_PASS
    assert empty.test_statuses == {task.FAIL_TO_PASS[0]: TestStatus.FAILED}
    assert "failed" in empty.log_tail


@pytest.mark.docker
def test_edited_tests_are_restored(
    polyglot: Polyglot, docker: tuple[SandboxBackend, str], tmp_path: Path
) -> None:
    task = find_task(polyglot, "polyglot__python__tide-table")
    # The agent replaces the tests by one that passes, and leaves the stub as it is.
    cheat = agent_diff(polyglot, task, tmp_path, write("tide_table_test.py", PASSING_TIDE_TESTS))
    assert "tide_table_test.py" in cheat
    report = grade(polyglot, docker, task, cheat)
    assert not report.resolved and report.patch_applied
    assert "restored files the patch changed: tide_table_test.py" in report.reason
    assert "tide_table_test.py" in report.dropped_for_grading
    failed = re.search(r"(\d+) failed", report.log_tail)
    assert failed and int(failed.group(1)) > 14  # the 14 tests and the grader's must-fail twins

    # Deleting the tests does not help either.
    deleted = grade(
        polyglot, docker, task, agent_diff(polyglot, task, tmp_path, delete("tide_table_test.py"))
    )
    assert not deleted.resolved and "restored" in deleted.reason

    # A real solution still passes when the agent also touched the tests.
    solved = agent_diff(
        polyglot,
        task,
        tmp_path,
        gold_solution(polyglot, task),
        write("tide_table_test.py", PASSING_TIDE_TESTS),
    )
    report = grade(polyglot, docker, task, solved)
    assert report.resolved, report.reason + "\n" + report.log_tail
    assert "14 passed" in report.log_tail  # the twins, and nothing else, failed


@pytest.mark.docker
@pytest.mark.parametrize(
    "path",
    # A conftest that ends the run early; modules that shadow pytest or the standard library.
    ["conftest.py", "pytest.py", "unittest.py"],
)
def test_added_runner_files_are_removed(
    polyglot: Polyglot, docker: tuple[SandboxBackend, str], tmp_path: Path, path: str
) -> None:
    task = find_task(polyglot, "polyglot__python__seat-finder")
    cheat = agent_diff(polyglot, task, tmp_path, write(path, "import os\nos._exit(0)\n"))
    report = grade(polyglot, docker, task, cheat)
    assert not report.resolved
    assert path in report.dropped_for_grading
    assert f"left out of grading as test infrastructure: {path}" in report.reason


@pytest.mark.docker
def test_agent_may_add_helper_modules(
    polyglot: Polyglot, docker: tuple[SandboxBackend, str], tmp_path: Path
) -> None:
    task = find_task(polyglot, "polyglot__python__seat-finder")
    exercise = polyglot.exercise(task)
    example = (exercise.path / ".meta" / "example.py").read_text()
    diff = agent_diff(
        polyglot,
        task,
        tmp_path,
        write("seating_impl.py", example),
        write("seat_finder.py", "from seating_impl import best_block, book\n"),
    )
    report = grade(polyglot, docker, task, diff)
    assert report.resolved, report.reason + "\n" + report.log_tail


@pytest.mark.docker
def test_patch_that_does_not_apply(polyglot: Polyglot, docker: tuple[SandboxBackend, str]) -> None:
    task = find_task(polyglot, "polyglot__python__tide-table")
    bogus = "--- a/tide_table.py\n+++ b/tide_table.py\n@@ -1,2 +1,2 @@\n-nothing like this\n+x\n"
    report = grade(polyglot, docker, task, bogus)
    assert not report.resolved and not report.patch_applied
    assert report.reason.startswith("the patch does not apply")


@pytest.mark.docker
def test_tests_that_hang_time_out(
    polyglot: Polyglot, docker: tuple[SandboxBackend, str], tmp_path: Path
) -> None:
    task = find_task(polyglot, "polyglot__python__token-bucket")
    diff = agent_diff(polyglot, task, tmp_path, write("token_bucket.py", "while True:\n    pass\n"))
    report = grade(polyglot, docker, task, diff, timeout_s=3)
    assert not report.resolved and report.tests_timed_out
    assert report.tests_exit_code is None
    assert "timed out after 3s" in report.reason


@pytest.mark.docker
def test_rust_is_refused_on_the_base_image(docker: tuple[SandboxBackend, str], tmp_path: Path) -> None:
    backend, image = docker
    sandbox = backend.start(SandboxSpec(image=image, workdir="/tmp"))
    try:
        found = sandbox.exec(["sh", "-c", "command -v cargo"], timeout_s=30)
        assert found.exit_code != 0 and found.stdout == ""  # the base image has no cargo
        assert sandbox.exec(["sh", "-c", "command -v python"], timeout_s=30).exit_code == 0
    finally:
        sandbox.close()
    assert image_probe(backend, image)(["cargo", "python", "go"]) == {"python"}

    write_rust_exercise(tmp_path)
    with pytest.raises(ToolchainMissing) as caught:
        Polyglot(root=tmp_path, languages=["rust"], probe=image_probe(backend, image))
    assert "rust needs `cargo`" in str(caught.value)
    # Without a probe, loading asks no engine (the service loads it); the worker's backend is
    # asked before a task runs or grades, of the image the tasks grade in (here the base image).
    loaded = Polyglot(root=tmp_path, languages=["rust"], image=image)
    task = loaded.tasks()[0]
    with pytest.raises(ToolchainMissing, match="rust needs `cargo`"):
        loaded.check_environment(task, backend)
    with pytest.raises(ToolchainMissing, match="rust needs `cargo`"):
        loaded.grade(task, task.patch, backend, image, 60)
    # An image that is not built is never built (nor pulled) to answer.
    absent = Polyglot(root=tmp_path, languages=["rust"], image="clade/none:x")
    with pytest.raises(
        ToolchainMissing,
        match=r"cannot run rust exercises: the image clade/none:x is not on this worker's engine; "
        r"build or load it there \(the run's `image` option names it\)",
    ):
        absent.check_environment(absent.tasks()[0], backend)
    assert not backend.images.exists("clade/none:x")


def test_one_sandbox_per_grade_mounting_the_repository_and_closed(polyglot: Polyglot) -> None:
    backend = LocalBackend()  # the host-subprocess test double: shows what grading asks of a backend
    task = find_task(polyglot, "polyglot__python__recipe-scaler")
    report = polyglot.grade(task, task.patch, backend, LOCAL_IMAGE, 60)
    assert report.resolved, report.reason + "\n" + report.log_tail
    assert len(backend.started) == 1
    sandbox = backend.started[0]
    assert sandbox.closed
    assert sandbox.commands == [[*task.test_command, *GRADER_PYTEST_ARGS]]
    mount, grader, results = sandbox.spec.mounts
    assert mount.target == "/clade/exercises/recipe-scaler" and not mount.read_only
    assert grader.target == GRADER_DIR and grader.read_only  # the plugin and the nonce
    assert results.target == RESULTS_DIR and not results.read_only
    assert sandbox.spec.workdir == mount.target and sandbox.spec.network == "none"
    assert sandbox.spec.tmpfs_exec  # compilers run what they build in /tmp
    assert not mount.source.exists()  # the graded copy is gone with its temporary folder
