"""folder: a benchmark of your own, from a folder in the clade-mini layout. No Python needed.

    get_benchmark("folder", path="/data/my-bench")
    # a run config:  benchmark: {name: folder, options: {path: /data/my-bench}}
    # check it:      clade bench check /data/my-bench

Each task is tasks/<id>/ with task.json, statement.md, and optionally gold.patch and
test.patch; its repository's base state is repos/<repo>/. A task is graded either by
pytest (`test_command`, FAIL_TO_PASS / PASS_TO_PASS, as clade-mini) or by an evaluator
command (`evaluator`) that prints a JSON verdict (see `evaluator.py`). Both run in a
fresh sandbox, never on the host. The layout: docs/own-benchmark.md.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from benchmarks.base import BrokenTask, GradeReport, Task, UnknownTask
from benchmarks.folder.evaluator import EVALUATOR_MOUNT, Verdict, grade_with_evaluator, parse_verdict
from benchmarks.folder.layout import FolderLayoutError, FolderTask, base_message, load_folder
from benchmarks.folder.options import FolderOptions
from benchmarks.gitops import make_repo
from benchmarks.pytest_grading import grade_pytest
from benchmarks.spec import validate_options
from sandbox.base import SandboxBackend

__all__ = [
    "EVALUATOR_MOUNT",
    "FolderBenchmark",
    "FolderLayoutError",
    "FolderOptions",
    "Verdict",
    "parse_verdict",
]


class FolderBenchmark:
    """The benchmark. Keyword options are those of `FolderOptions` (`path`, required).
    The folder is read and checked when the benchmark is made: a malformed one raises
    `FolderLayoutError`, naming the file at fault."""

    name = "folder"

    def __init__(self, **options: Any) -> None:
        self.options: FolderOptions = validate_options(self.name, FolderOptions, options)
        folder = load_folder(self.options.path)
        self._entries = {entry.task.instance_id: entry for entry in folder.tasks}
        self._order = [entry.task for entry in folder.tasks]
        self._subsets = folder.subsets

    def tasks(self) -> list[Task]:
        return list(self._order)

    def subsets(self) -> dict[str, list[str]]:
        return {name: list(ids) for name, ids in self._subsets.items()}

    def prepare_repo(self, task: Task, dest: Path) -> str:
        entry = self._entry(task)
        sha = make_repo(entry.repo_dir, dest, base_message(task.repo))
        if sha != task.base_commit:
            # The files under repos/ changed since the benchmark was loaded.
            raise BrokenTask(f"{task.instance_id}: built base commit {sha}, expected {task.base_commit}")
        return sha

    def grade(
        self, task: Task, diff: str, backend: SandboxBackend, image: str, timeout_s: float
    ) -> GradeReport:
        entry = self._entry(task)
        # ignore_cleanup_errors: files the sandbox user created may not be removable by us.
        with tempfile.TemporaryDirectory(prefix="clade-grade-", ignore_cleanup_errors=True) as tmp:
            work_dir = Path(tmp)
            repo = work_dir / "repo"
            self.prepare_repo(task, repo)
            if entry.mode == "pytest":
                return grade_pytest(
                    task, repo, diff, backend=backend, image=image, timeout_s=timeout_s, work_dir=work_dir
                )
            return grade_with_evaluator(
                task,
                repo,
                diff,
                evaluator_dir=entry.evaluator_dir,
                backend=backend,
                image=image,
                timeout_s=timeout_s,
                work_dir=work_dir,
            )

    def _entry(self, task: Task) -> FolderTask:
        entry = self._entries.get(task.instance_id)
        if entry is None:
            raise UnknownTask(f"folder benchmark {self.options.path} has no task {task.instance_id!r}")
        return entry
