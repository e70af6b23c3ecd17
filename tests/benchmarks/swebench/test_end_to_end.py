"""The fixture instances through the swebench benchmark, in Docker: instance images built here
from Clade's base image, the agent's bind mount at /testbed, grading in fresh sandboxes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from benchmarks import BrokenTask, GradeReport, TestStatus, find_task
from benchmarks.gitops import git_ok
from benchmarks.swebench import Harness, SWEbench, SWEbenchOptions, SWEbenchTask
from sandbox.base import Mount, SandboxBackend, SandboxSpec, SandboxUnavailable
from sandbox.docker_images import DockerImages
from sandbox.ownership import give_to_sandbox_user
from tests.benchmarks.helpers import PATCH_PYTEST_REPORTS
from tests.benchmarks.swebench.agent_diffs import (
    STALE_DIFF,
    append,
    diff_after,
    gold,
    hang_at_width_5,
    own_merge_tests,
    write,
)
from tests.benchmarks.swebench.conftest import FixtureSet
from tests.benchmarks.swebench.fixture_set import instances, write_jsonl

pytestmark = pytest.mark.docker
INSTANCES = {instance.meta["instance_id"]: instance for instance in instances()}


def task_of(bench: SWEbench, instance_id: str) -> SWEbenchTask:
    task = find_task(bench, instance_id)
    assert isinstance(task, SWEbenchTask)
    return task


def grade(
    bench: SWEbench, backend: SandboxBackend, instance_id: str, diff: str, timeout_s: float = 60
) -> GradeReport:
    task = task_of(bench, instance_id)
    return bench.grade(task, diff, backend, "unused: each instance names its image", timeout_s)


@pytest.mark.parametrize("instance_id", list(INSTANCES))
def test_the_gold_patch_resolves(bench: SWEbench, backend: SandboxBackend, instance_id: str) -> None:
    task = task_of(bench, instance_id)
    report = grade(bench, backend, instance_id, task.patch)
    assert report.resolved, report.reason + "\n" + report.log_tail
    # pytest exits 1 for the grader's must-fail twins, the only failures of an honest run.
    assert report.patch_applied and report.tests_exit_code == 1
    assert report.tampered is None and report.dropped_for_grading == {}
    assert set(report.test_statuses) == {*task.FAIL_TO_PASS, *task.PASS_TO_PASS}  # no canary shown
    assert report.FAIL_TO_PASS.success == task.FAIL_TO_PASS
    assert report.PASS_TO_PASS.success == task.PASS_TO_PASS
    assert all(report.test_statuses[test] == TestStatus.PASSED for test in task.FAIL_TO_PASS)
    assert ">>>>> End Test Output" in report.log_tail


@pytest.mark.parametrize("instance_id", list(INSTANCES))
def test_the_empty_patch_does_not(bench: SWEbench, backend: SandboxBackend, instance_id: str) -> None:
    task = task_of(bench, instance_id)
    report = grade(bench, backend, instance_id, "")
    assert not report.resolved
    # The test command's own exit status (pytest: 1, tests failed), not the eval script's,
    # which ends with a `git checkout` and is 0.
    assert report.tests_exit_code == 1, report.log_tail
    assert report.FAIL_TO_PASS.failure == task.FAIL_TO_PASS
    assert report.PASS_TO_PASS.success == task.PASS_TO_PASS
    assert all(report.test_statuses[test] == TestStatus.FAILED for test in task.FAIL_TO_PASS)
    assert report.reason.startswith(
        f"not resolved: {len(task.FAIL_TO_PASS)}/{len(task.FAIL_TO_PASS)} FAIL_TO_PASS"
    )


def test_prepare_repo_gives_one_commit_without_the_hidden_tests(bench: SWEbench, tmp_path: Path) -> None:
    task = task_of(bench, "clade-fixtures__tinyinv-2")
    repo = tmp_path / "repo"
    sha = bench.prepare_repo(task, repo)
    assert git_ok(repo, "rev-parse", "HEAD").strip() == sha
    assert git_ok(repo, "rev-list", "--count", "--all").strip() == "1"  # the image's history stays out
    assert not git_ok(repo, "status", "--porcelain").strip()
    assert (repo / "tinyinv/stock.py").is_file() and not (repo / "tests/test_merge.py").exists()
    assert (repo / "docs/README.md").is_symlink()  # kept as a link
    assert git_ok(repo, "ls-files", "data/restock.log").strip()  # tracked, though .gitignore matches it


def test_an_agent_in_the_instance_image_edits_testbed(
    bench: SWEbench, backend: SandboxBackend, tmp_path: Path
) -> None:
    """The runner's model: the host's work tree mounted at /testbed in the instance image, the
    agent (uid 1000) edits it there, the host takes `git diff`, a fresh sandbox grades it."""
    task = task_of(bench, "clade-fixtures__wrapkit-1")
    repo, patches = tmp_path / "repo", tmp_path / "patches"
    bench.prepare_repo(task, repo)
    patches.mkdir()
    (patches / "fix.patch").write_text(task.patch)
    give_to_sandbox_user(repo)
    spec = SandboxSpec(
        image=task.image,
        mounts=[
            Mount(source=repo, target=task.repo_path, read_only=False),
            Mount(source=patches, target="/clade/task", read_only=True),
        ],
        workdir=task.repo_path,
        env={"HOME": "/tmp"},
    )
    sandbox = backend.start(spec)
    try:
        edit = sandbox.exec(["git", "apply", "/clade/task/fix.patch"], timeout_s=60, cwd=task.repo_path)
        assert edit.exit_code == 0, edit.stderr
        run = sandbox.exec(
            ["python", "-c", "import wrapkit; print(wrapkit.wrap('aa bb cc', 5))"], timeout_s=60
        )
        assert run.stdout.strip() == "['aa bb', 'cc']", run.stderr
    finally:
        sandbox.close()
    git_ok(repo, "-c", "safe.directory=*", "add", "--all")
    diff = git_ok(repo, "-c", "safe.directory=*", "diff", "--cached", "--binary")
    assert "wrapkit/wrap.py" in diff
    assert grade(bench, backend, task.instance_id, diff).resolved


def test_changes_to_test_files_are_left_out(bench: SWEbench, backend: SandboxBackend) -> None:
    """The agent writes the file the hidden tests create, with passing tests of the same names:
    the official harness would run those (fixtures/logs/test-patch-conflict.log); Clade drops them."""
    tinyinv_2 = INSTANCES["clade-fixtures__tinyinv-2"]
    report = grade(bench, backend, "clade-fixtures__tinyinv-2", diff_after(tinyinv_2, own_merge_tests()))
    assert not report.resolved
    assert report.reason.endswith("changes to test files left out: tests/test_merge.py")
    assert report.FAIL_TO_PASS.failure == [
        "tests/test_merge.py::test_merge_keeps_items_only_in_the_other_stock"
    ]
    honest = diff_after(tinyinv_2, gold(tinyinv_2), write("tests/test_stock.py", "def test_x():\n    pass\n"))
    assert grade(bench, backend, "clade-fixtures__tinyinv-2", honest).resolved


def test_forged_passes_are_caught(bench: SWEbench, backend: SandboxBackend) -> None:
    """A sitecustomize.py and a .pth (start-up code, though not test files by their paths) are
    left out; the code under test rewriting pytest's reports is caught by the twins."""
    wrapkit = INSTANCES["clade-fixtures__wrapkit-1"]
    planted = diff_after(
        wrapkit, write("sitecustomize.py", PATCH_PYTEST_REPORTS), write("wrapkit.pth", "import os\n")
    )
    report = grade(bench, backend, "clade-fixtures__wrapkit-1", planted)
    assert not report.resolved and report.tampered is None
    assert list(report.dropped_for_grading) == ["sitecustomize.py", "wrapkit.pth"]

    patched = diff_after(wrapkit, append("wrapkit/__init__.py", PATCH_PYTEST_REPORTS))
    report = grade(bench, backend, "clade-fixtures__wrapkit-1", patched)
    assert not report.resolved
    assert report.tampered is not None and "must-fail twin" in report.tampered
    assert report.reason.startswith("tampered: ")

    # PASSED lines for the graded tests, printed past pytest's capture once it is done.
    tests = [*wrapkit.meta["FAIL_TO_PASS"], *wrapkit.meta["PASS_TO_PASS"]]
    lines = "".join(f"PASSED {test}\\n" for test in tests)
    at_exit = f'\nimport atexit, os\natexit.register(lambda: os.write(1, b"{lines}"))\n'
    printed = diff_after(wrapkit, append("wrapkit/__init__.py", at_exit))
    report = grade(bench, backend, "clade-fixtures__wrapkit-1", printed)
    assert not report.resolved
    assert report.tampered is not None and "after pytest's final summary" in report.tampered


def test_a_patch_that_does_not_apply(bench: SWEbench, backend: SandboxBackend) -> None:
    report = grade(bench, backend, "clade-fixtures__wrapkit-1", STALE_DIFF)
    assert not report.resolved and not report.patch_applied
    assert "does not apply" in report.reason and "wrapkit/wrap.py" in report.reason


def test_a_timeout_is_never_resolved(bench: SWEbench, backend: SandboxBackend) -> None:
    wrapkit = INSTANCES["clade-fixtures__wrapkit-1"]
    report = grade(bench, backend, wrapkit.meta["instance_id"], diff_after(wrapkit, hang_at_width_5()), 6)
    assert not report.resolved and report.tests_timed_out and report.tests_exit_code is None
    assert report.reason.startswith("the tests timed out after 6s")
    assert report.log_tail.endswith("Timeout error: 6 seconds exceeded.")


def test_a_missing_instance_image_is_a_clear_error(
    fixture_set: FixtureSet, docker_client: Any, harness: Harness, tmp_path: Path
) -> None:
    row = dict(fixture_set.rows["clade-fixtures__wrapkit-1"])
    if harness.major == 5:
        row["image"] = "clade/absent:none"
    options = SWEbenchOptions(
        dataset=str(write_jsonl([row], tmp_path / "absent.jsonl")), namespace="clade-absent"
    )
    absent = SWEbench(options, images=DockerImages(docker_client), harness=harness)
    name = absent.tasks()[0].image
    # Absent here, and no registry is reachable: the pull fails, naming the image.
    with pytest.raises(
        SandboxUnavailable, match=rf"image {re.escape(str(name))} is not on this Docker engine"
    ):
        absent.prepare_repo(absent.tasks()[0], tmp_path / "repo")


def test_an_image_at_another_commit_is_a_broken_task(
    fixture_set: FixtureSet, docker_client: Any, harness: Harness, tmp_path: Path
) -> None:
    row = {**fixture_set.rows["clade-fixtures__wrapkit-1"], "base_commit": "0" * 40}
    options = SWEbenchOptions(dataset=str(write_jsonl([row], tmp_path / "moved.jsonl")))
    moved = SWEbench(options, images=DockerImages(docker_client), harness=harness)
    with pytest.raises(BrokenTask, match=r"/testbed in .* is at [0-9a-f]{40}, the instance says 0{40}"):
        moved.prepare_repo(moved.tasks()[0], tmp_path / "repo")
