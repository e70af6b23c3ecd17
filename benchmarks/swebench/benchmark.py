"""The `swebench` benchmark: SWE-bench instances, run and graded in their own images."""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path

from benchmarks.base import GradeReport, OptionError, Task, UnknownTask
from benchmarks.gitops import snapshot
from benchmarks.swebench.dataset import DatasetError, Row, load_rows
from benchmarks.swebench.grading import Resources, grade_task
from benchmarks.swebench.harness import Harness, load_harness
from benchmarks.swebench.options import SWEbenchOptions
from benchmarks.swebench.tasks import SWEbenchTask, to_task
from benchmarks.swebench.testbed import export_base
from sandbox.base import ImageStore, SandboxBackend
from sandbox.registry import default_images

REPO_SUBSET_PREFIX = "repo:"


class UnknownInstance(UnknownTask, OptionError):
    """An option names an instance or subset the dataset does not have."""


class SWEbench:
    """Instances from a file or a dataset; each runs in its instance image at /testbed.

    `prepare_repo` copies the repository out of the instance image and gives the agent a
    work tree with one commit of it (the image's git history stays out of the agent's
    reach); `grade` runs the instance's eval script in a fresh sandbox of the image and
    lets the swebench package read the log. The `image` argument of `grade` is not used:
    every instance names its own.
    """

    name = "swebench"

    def __init__(
        self,
        options: SWEbenchOptions,
        *,
        images: ImageStore | None = None,
        harness: Harness | None = None,
        offline: bool = False,
    ) -> None:
        self.options = options
        self.harness = harness or load_harness()
        self._images = images
        self._lock = threading.Lock()
        rows = load_rows(
            options.dataset, split=options.split, timeout_s=options.dataset_timeout_s, offline=offline
        )
        by_id = _index(rows, options.dataset)
        named = self._named_subsets(by_id)
        selected = self._select(by_id, named)
        self._tasks = [to_task(by_id[iid], self.harness, namespace=options.namespace) for iid in selected]
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
        with tempfile.TemporaryDirectory(prefix="clade-swebench-", ignore_cleanup_errors=True) as tmp:
            repo = export_base(self._image_store(), own, Path(tmp))
            return snapshot(repo, dest, f"{own.instance_id}: {own.repo} at {own.base_commit}")

    def grade(
        self, task: Task, diff: str, backend: SandboxBackend, image: str, timeout_s: float
    ) -> GradeReport:
        del image  # each instance runs in its own image
        options = self.options
        return grade_task(
            self._own(task),
            diff,
            harness=self.harness,
            backend=backend,
            timeout_s=timeout_s,
            resources=Resources(memory_mb=options.memory_mb, cpus=options.cpus, pids=options.pids),
        )

    def _own(self, task: Task) -> SWEbenchTask:
        own = self._by_id.get(task.instance_id)
        if own is None:
            raise UnknownTask(f"{self.name} has no task {task.instance_id!r}")
        return own

    def _image_store(self) -> ImageStore:
        """The images `prepare_repo` copies repositories out of: those given, else the default
        backend's on this host (connected on first use: loading the benchmark needs no engine)."""
        with self._lock:
            if self._images is None:
                self._images = default_images()
            return self._images

    def _named_subsets(self, by_id: dict[str, Row]) -> dict[str, list[str]]:
        named: dict[str, list[str]] = {}
        for name, members in self.options.subsets.items():
            _check_known(members, by_id, f"subsets.{name}")
            named[name] = list(dict.fromkeys(members))
        for iid, row in by_id.items():
            named.setdefault(f"{REPO_SUBSET_PREFIX}{row.get('repo')}", []).append(iid)
        return named

    def _select(self, by_id: dict[str, Row], named: dict[str, list[str]]) -> list[str]:
        options = self.options
        if options.instance_ids is not None:
            _check_known(options.instance_ids, by_id, "instance_ids")
            return list(dict.fromkeys(options.instance_ids))
        if options.subset is not None:
            if options.subset not in named and options.subset != "all":
                known = ", ".join(sorted(name for name in named if not name.startswith(REPO_SUBSET_PREFIX)))
                raise UnknownInstance(
                    "subset",
                    f"swebench has no subset {options.subset!r} (defined in `subsets`: {known or 'none'}; "
                    f"or {REPO_SUBSET_PREFIX}<owner/name>)",
                )
            return named.get(options.subset, list(by_id))
        return list(by_id)


def _index(rows: list[Row], source: str) -> dict[str, Row]:
    by_id: dict[str, Row] = {}
    for number, row in enumerate(rows):
        iid = row.get("instance_id")
        if iid is None or iid == "":
            raise DatasetError(f"{source}: instance {number} has no instance_id")
        if not isinstance(iid, str):
            kind = type(iid).__name__
            raise DatasetError(f"{source}: instance {number}'s instance_id must be text, got {kind}")
        if iid in by_id:
            raise DatasetError(f"{source}: instance {iid!r} appears twice")
        by_id[iid] = row
    return by_id


def _check_known(ids: list[str], by_id: dict[str, Row], where: str) -> None:
    unknown = [iid for iid in ids if iid not in by_id]
    if unknown:
        shown = ", ".join(unknown[:10]) + (f" and {len(unknown) - 10} more" if len(unknown) > 10 else "")
        raise UnknownInstance(where, f"{where}: the dataset has no instance {shown}")
