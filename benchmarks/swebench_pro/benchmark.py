"""The `swebench-pro` benchmark: SWE-bench Pro rows, run and graded in their own images."""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path

from benchmarks.base import BrokenTask, GradeReport, OptionError, Task, UnknownTask
from benchmarks.gitops import snapshot
from benchmarks.swebench.dataset import DatasetError, load_rows
from benchmarks.swebench.testbed import export_repo, head_commit
from benchmarks.swebench_pro.grading import Resources, grade_task
from benchmarks.swebench_pro.options import SWEbenchProOptions
from benchmarks.swebench_pro.tasks import REPO_PATH, SWEbenchProTask, to_task
from benchmarks.userfiles import folder_option
from sandbox.base import ImageStore, SandboxBackend
from sandbox.registry import default_images

ALIASES = {"pro": "ScaleAI/SWE-bench_Pro"}
NAMED_PREFIXES = ("repo:", "language:")


class UnknownInstance(UnknownTask, OptionError):
    """An option names an instance or subset the rows do not have."""


class SWEbenchPro:
    """Rows from a file or a dataset, scripts from a folder; each task runs in its image at /app.

    `prepare_repo` copies /app out of the instance image and gives the agent a work tree with
    one commit of it (the image's history, which holds the fix's commit, stays out of reach);
    `grade` runs the instance's run script and parser (`grading.py`). The `image` argument of
    `grade` is not used: every row names its own.
    """

    name = "swebench-pro"

    def __init__(
        self, options: SWEbenchProOptions, *, images: ImageStore | None = None, offline: bool = False
    ) -> None:
        self.options = options
        self._images = images
        self._lock = threading.Lock()
        try:
            scripts = folder_option(Path(options.scripts))
        except ValueError as exc:
            raise OptionError("scripts", f"scripts: {exc}") from exc
        dataset = ALIASES.get(options.dataset.strip().lower(), options.dataset)
        rows = load_rows(dataset, split=options.split, timeout_s=options.dataset_timeout_s, offline=offline)
        tasks: dict[str, SWEbenchProTask] = {}
        for row in rows:
            task = to_task(row, scripts, image_repository=options.image_repository)
            if task.instance_id in tasks:
                raise DatasetError(f"{options.dataset}: instance {task.instance_id!r} appears twice")
            tasks[task.instance_id] = task
        named = self._named(tasks)
        selected = self._select(tasks, named)
        self._tasks = [tasks[iid] for iid in selected]
        self._by_id = {task.instance_id: task for task in self._tasks}
        chosen = set(selected)
        self._subsets: dict[str, list[str]] = {"all": selected}
        for name, members in named.items():
            kept = [iid for iid in members if iid in chosen]
            if kept:
                self._subsets[name] = kept

    def tasks(self) -> list[Task]:
        return list(self._tasks)

    def subsets(self) -> dict[str, list[str]]:
        return {name: list(ids) for name, ids in self._subsets.items()}

    def prepare_repo(self, task: Task, dest: Path) -> str:
        """The repository at the base commit, as a work tree with one commit (no history)."""
        own = self._own(task)
        with tempfile.TemporaryDirectory(prefix="clade-swebench-pro-", ignore_cleanup_errors=True) as tmp:
            repo = export_repo(self._image_store(), own.image, REPO_PATH, Path(tmp))
            head = head_commit(repo)
            if head != own.base_commit:
                at = head or "no commit"
                raise BrokenTask(
                    f"{own.instance_id}: {REPO_PATH} in {own.image} is at {at}, not the base commit"
                )
            return snapshot(repo, dest, f"{own.instance_id}: {own.repo} at {own.base_commit}")

    def grade(
        self, task: Task, diff: str, backend: SandboxBackend, image: str, timeout_s: float
    ) -> GradeReport:
        del image  # each instance runs in its own image
        options = self.options
        return grade_task(
            self._own(task),
            diff,
            backend=backend,
            timeout_s=timeout_s,
            parser_timeout_s=options.parser_timeout_s,
            resources=Resources(memory_mb=options.memory_mb, cpus=options.cpus, pids=options.pids),
        )

    def _own(self, task: Task) -> SWEbenchProTask:
        own = self._by_id.get(task.instance_id)
        if own is None:
            raise UnknownTask(f"{self.name} has no task {task.instance_id!r}")
        return own

    def _image_store(self) -> ImageStore:
        """The images `prepare_repo` copies repositories out of: those given, else the default
        backend's on this host (connected on first use: loading needs no engine)."""
        with self._lock:
            if self._images is None:
                self._images = default_images()
            return self._images

    def _named(self, tasks: dict[str, SWEbenchProTask]) -> dict[str, list[str]]:
        named: dict[str, list[str]] = {}
        for name, members in self.options.subsets.items():
            _check_known(members, tasks, f"subsets.{name}")
            named[name] = list(dict.fromkeys(members))
        for iid, task in tasks.items():
            named.setdefault(f"repo:{task.repo}", []).append(iid)
            if task.repo_language:
                named.setdefault(f"language:{task.repo_language}", []).append(iid)
        return named

    def _select(self, tasks: dict[str, SWEbenchProTask], named: dict[str, list[str]]) -> list[str]:
        options = self.options
        if options.instance_ids is not None:
            _check_known(options.instance_ids, tasks, "instance_ids")
            return list(dict.fromkeys(options.instance_ids))
        if options.subset is not None and options.subset != "all":
            if options.subset not in named:
                own = ", ".join(sorted(name for name in named if not name.startswith(NAMED_PREFIXES)))
                raise UnknownInstance(
                    "subset",
                    f"swebench-pro has no subset {options.subset!r} (defined in `subsets`: {own or 'none'}; "
                    "or repo:<owner/name>, language:<repo_language>)",
                )
            return named[options.subset]
        return list(tasks)


def _check_known(ids: list[str], tasks: dict[str, SWEbenchProTask], where: str) -> None:
    unknown = [iid for iid in ids if iid not in tasks]
    if unknown:
        shown = ", ".join(unknown[:10]) + (f" and {len(unknown) - 10} more" if len(unknown) > 10 else "")
        raise UnknownInstance(where, f"{where}: the rows have no instance {shown}")
