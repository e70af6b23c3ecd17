"""clade-mini: a small offline benchmark written for Clade, in SWE-bench instance format.

Layout (all plain files, so patches are real unified diffs):
  suite.json                   the task ids, in order (subset "mini-N" is the first N)
  .repos/<repo>/               each repository's base state (bugs included); a dot
                               folder, so that mypy and pytest, which skip those, do
                               not take the task repositories for Clade's own code
  tasks/<id>/task.json         SWE-bench fields: repo, base_commit, FAIL_TO_PASS, ...
  tasks/<id>/statement.md      the issue the agent sees
  tasks/<id>/gold.patch        the reference fix
  tasks/<id>/test.patch        the hidden tests
"""

from __future__ import annotations

import json
import tempfile
from functools import cached_property
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from benchmarks.base import BrokenTask, GradeReport, Task
from benchmarks.gitops import make_repo
from benchmarks.pytest_grading import grade_pytest
from sandbox.base import SandboxBackend

DATA_DIR = Path(__file__).parent
ID_PREFIX = "clade-mini__"
# Named subsets: the first N tasks of suite.json. Stage configs and tests refer to these
# names, so new tasks go at the end of the suite.
PREFIX_SUBSETS = (5, 10, 30)


class Suite(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tasks: list[str]


class CladeMini:
    name = "clade-mini"

    def __init__(self, data_dir: Path = DATA_DIR):
        self.data_dir = data_dir

    @cached_property
    def _tasks(self) -> list[Task]:
        suite = Suite.model_validate_json((self.data_dir / "suite.json").read_text())
        return [self._load(instance_id) for instance_id in suite.tasks]

    def _load(self, instance_id: str) -> Task:
        folder = self.data_dir / "tasks" / instance_id.removeprefix(ID_PREFIX)
        try:
            fields = json.loads((folder / "task.json").read_text())
            return Task(
                **fields,
                problem_statement=(folder / "statement.md").read_text(),
                patch=(folder / "gold.patch").read_text(),
                test_patch=(folder / "test.patch").read_text(),
            )
        except FileNotFoundError as exc:
            raise BrokenTask(f"{instance_id}: missing file {exc.filename}") from exc

    def tasks(self) -> list[Task]:
        return list(self._tasks)

    def subsets(self) -> dict[str, list[str]]:
        ids = [task.instance_id for task in self._tasks]
        subsets = {f"mini-{size}": ids[:size] for size in PREFIX_SUBSETS if size <= len(ids)}
        return subsets | {"all": ids}

    def prepare_repo(self, task: Task, dest: Path) -> str:
        source = self.data_dir / ".repos" / task.repo.removeprefix("clade-mini/")
        sha = make_repo(source, dest, f"{task.repo}: base state")
        if sha != task.base_commit:
            # The files under .repos/ changed without the tasks being updated.
            raise BrokenTask(f"{task.instance_id}: built base commit {sha}, task says {task.base_commit}")
        return sha

    def grade(
        self, task: Task, diff: str, backend: SandboxBackend, image: str, timeout_s: float
    ) -> GradeReport:
        # ignore_cleanup_errors: files the sandbox user created may not be removable by us.
        with tempfile.TemporaryDirectory(prefix="clade-grade-", ignore_cleanup_errors=True) as tmp:
            work_dir = Path(tmp)
            repo = work_dir / "repo"
            self.prepare_repo(task, repo)
            return grade_pytest(
                task,
                repo,
                diff,
                backend=backend,
                image=image,
                timeout_s=timeout_s,
                work_dir=work_dir,
            )
