"""The benchmark seam: registry, clade-mini's task data, and prepare_repo."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import (
    BenchmarkRegistry,
    BenchmarkSpec,
    BrokenTask,
    Task,
    UnknownBenchmark,
    UnknownTask,
    find_task,
    get_benchmark,
    known_benchmarks,
    subset_tasks,
)
from benchmarks.clade_mini import CladeMini
from benchmarks.gitops import git_ok, patch_paths
from contracts.benchmark_options import BenchmarkConfig, Options
from worker.curriculum import statement_marker


def test_registry_builds_clade_mini() -> None:
    assert "clade-mini" in known_benchmarks()
    assert isinstance(get_benchmark("clade-mini"), CladeMini)


def test_unknown_benchmark_lists_the_known_ones() -> None:
    with pytest.raises(UnknownBenchmark, match=r"'nope'.*clade-mini") as caught:
        get_benchmark("nope")
    assert isinstance(caught.value, LookupError)


def test_register_a_benchmark_with_options(tmp_path: Path) -> None:
    class CopyOptions(Options):
        data_dir: Path

    spec = BenchmarkSpec("clade-mini-copy", CopyOptions, lambda options, _: CladeMini(options.data_dir))
    registry = BenchmarkRegistry.installed().with_specs(spec)
    config = BenchmarkConfig(name="clade-mini-copy", options={"data_dir": str(CladeMini().data_dir)})
    assert len(registry.build(config).tasks()) == len(CladeMini().tasks())
    assert "clade-mini-copy" not in known_benchmarks()  # this registry's, not the process's


# Other code and its tests name these tasks, and stage configs name subsets by position.
FIRST_TASKS = [
    f"clade-mini__{name}-{number}"
    for number in (1, 2, 3)
    for name in ("textkit", "spanlib", "ledger", "calcpy")
]


def test_clade_mini_tasks_and_subsets(clade_mini: CladeMini) -> None:
    tasks = clade_mini.tasks()
    ids = [task.instance_id for task in tasks]
    assert len(tasks) >= 30
    assert len(set(ids)) == len(ids)
    assert ids[:12] == FIRST_TASKS
    subsets = clade_mini.subsets()
    assert sorted(subsets) == ["all", "mini-10", "mini-30", "mini-5"]
    assert subsets["all"] == ids
    for size in (5, 10, 30):
        assert subsets[f"mini-{size}"] == ids[:size]
        assert [task.instance_id for task in subset_tasks(clade_mini, f"mini-{size}")] == ids[:size]
    assert len({task.repo for task in subset_tasks(clade_mini, "mini-5")}) == 4
    repos = {task.repo for task in tasks}
    assert {task.repo for task in subset_tasks(clade_mini, "mini-30")} == repos
    with pytest.raises(UnknownTask):
        subset_tasks(clade_mini, "mini-500")
    with pytest.raises(UnknownTask):
        find_task(clade_mini, "clade-mini__nope-1")


def test_clade_mini_spread(clade_mini: CladeMini) -> None:
    tasks = clade_mini.tasks()
    assert len({task.repo for task in tasks}) >= 6
    # Some fixes span several source files.
    multi_file = [task.instance_id for task in tasks if len(patch_paths(task.patch)) > 1]
    assert len(multi_file) >= 3


def test_statements_are_told_apart_by_their_first_line(clade_mini: CladeMini) -> None:
    """Scripted models find the task an agent works on by its statement's first line
    (`worker.curriculum.statement_marker`), so no other statement may contain it."""
    tasks = clade_mini.tasks()
    for task in tasks:
        assert task.problem_statement.startswith("# ")  # a title, as an issue has
        marker = statement_marker(task)
        for other in tasks:
            if other is not task:
                assert not re.search(marker, other.problem_statement), (task.instance_id, other.instance_id)


@pytest.mark.parametrize("task", CladeMini().tasks(), ids=lambda task: task.instance_id)
def test_task_data_is_well_formed(task: Task) -> None:
    assert task.problem_statement.strip()
    assert task.FAIL_TO_PASS
    assert not set(task.FAIL_TO_PASS) & set(task.PASS_TO_PASS)
    assert task.repo_path == "/clade/repo"
    assert all(path.startswith("tests/") for path in patch_paths(task.test_patch))
    assert not any(path.startswith("tests/") for path in patch_paths(task.patch))
    # The statement does not give away the hidden tests.
    assert not any(test.split("::")[-1] in task.problem_statement for test in task.FAIL_TO_PASS)


def test_prepare_repo_is_the_base_state_without_hidden_tests(clade_mini: CladeMini, tmp_path: Path) -> None:
    task = find_task(clade_mini, "clade-mini__ledger-2")
    sha = clade_mini.prepare_repo(task, tmp_path / "repo")
    assert sha == task.base_commit
    repo = tmp_path / "repo"
    assert git_ok(repo, "rev-list", "--count", "HEAD").strip() == "1"
    assert git_ok(repo, "status", "--porcelain") == ""
    sources = "".join(path.read_text() for path in repo.rglob("*.py"))
    for test_id in task.FAIL_TO_PASS:
        assert test_id.split("::")[-1] not in sources
    with pytest.raises(FileExistsError):
        clade_mini.prepare_repo(task, repo)


def test_edited_repo_sources_are_caught(tmp_path: Path) -> None:
    data = tmp_path / "clade_mini"
    clade_mini_dir = CladeMini().data_dir
    for name in ("suite.json", "tasks", ".repos"):
        source = clade_mini_dir / name
        if source.is_dir():
            subprocess.run(["cp", "-r", str(source), str(data / name)], check=True)
        else:
            data.mkdir()
            (data / name).write_text(source.read_text())
    readme = data / ".repos" / "textkit" / "README.md"
    readme.write_text(readme.read_text() + "\nOne more line.\n")
    benchmark = CladeMini(data_dir=data)
    with pytest.raises(BrokenTask, match="base commit"):
        benchmark.prepare_repo(find_task(benchmark, "clade-mini__textkit-1"), tmp_path / "repo")


@pytest.mark.parametrize("repo_name", sorted({task.repo for task in CladeMini().tasks()}))
def test_each_repo_passes_its_own_tests(clade_mini: CladeMini, repo_name: str, tmp_path: Path) -> None:
    task = next(task for task in clade_mini.tasks() if task.repo == repo_name)
    clade_mini.prepare_repo(task, tmp_path / "repo")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=tmp_path / "repo",
        # Without the host's pytest plugins, which the sandbox image does not have either.
        env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout


def test_task_accepts_swebench_json_encoded_lists() -> None:
    task = Task(
        instance_id="owner__repo-1",
        repo="owner/repo",
        base_commit="0" * 40,
        problem_statement="x",
        patch="",
        test_patch="",
        FAIL_TO_PASS='["tests/test_a.py::test_a"]',
        PASS_TO_PASS="[]",
        test_command=["pytest"],
    )
    assert task.FAIL_TO_PASS == ["tests/test_a.py::test_a"]
    assert task.PASS_TO_PASS == []
