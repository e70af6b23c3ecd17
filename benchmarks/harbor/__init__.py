"""harbor: Harbor task folders (Terminal-Bench 2.x, and every benchmark Harbor's adapters emit).

    # a run config:  benchmark: {name: harbor, options: {path: /data/terminal-bench-2}}
    # check it:      clade bench check harbor -o path=/data/terminal-bench-2

The agent works in the task's environment image (built offline from environment/Dockerfile, or
the image the task or the `images` option names), in its work folder, told `instruction.md`.
Its diff of the work folder is the artefact Clade archives (with its trajectory and the
verifier's log); the verifier runs over it in a fresh sandbox of the same image (`verify.py`).
The gold for `clade bench check` is what `solution/solve.sh` changes in the work folder.
The layout and what carries over: docs/harbor.md.
"""

from __future__ import annotations

import hashlib
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.base import BenchmarkError, BrokenTask, GradeReport, Task, UnknownTask, unapplied
from benchmarks.gitops import apply_patch, git_ok, snapshot
from benchmarks.graded_diff import drop_test_infrastructure
from benchmarks.harbor.environment import build_image, image_tag, named_image
from benchmarks.harbor.layout import HarborLayoutError, HarborTask, find_task_folders, read_task
from benchmarks.harbor.options import HarborOptions
from benchmarks.harbor.verify import (
    VERIFIER_TEST,
    Limits,
    reaches_verifier_logs,
    run_verifier,
    tampered_report,
)
from sandbox.base import (
    LABEL_PREFIX,
    ImageStore,
    Mount,
    Progress,
    SandboxBackend,
    SandboxError,
    SandboxFileError,
    SandboxSpec,
)
from sandbox.ownership import make_world_writable
from sandbox.registry import default_images

__all__ = ["HarborBenchmark", "HarborLayoutError", "HarborOptions"]

SOLUTION_MOUNT = "/solution"
_REPO_NAME = "harbor"


class HarborBenchmark:
    name = "harbor"

    def __init__(self, options: HarborOptions, *, images: ImageStore | None = None) -> None:
        self.options = options
        self._images = images
        self._lock = threading.Lock()
        self.skipped: dict[str, str] = {}  # task folder -> why it was left out (skip_unsupported)
        harbor: dict[str, HarborTask] = {}
        for folder in find_task_folders(options.path):
            try:
                task = read_task(folder, options.path)
            except HarborLayoutError as exc:
                if not options.skip_unsupported:
                    raise
                self.skipped[str(folder)] = str(exc)
                continue
            if task.name in harbor:
                raise HarborLayoutError(
                    folder, f"a second task named {task.name!r} ({harbor[task.name].folder})"
                )
            harbor[task.name] = task
        if not harbor:
            raise HarborLayoutError(
                options.path, "holds no Harbor task folder (a folder with task.toml) Clade can run"
            )
        order = list(harbor)
        if options.tasks is not None:
            unknown = [name for name in options.tasks if name not in harbor]
            if unknown:
                # One readable line: escapes shown as such, and the first ten of thousands.
                shown = ", ".join(name.encode("unicode_escape").decode("ascii") for name in unknown[:10])
                more = f" and {len(unknown) - 10} more" if len(unknown) > 10 else ""
                raise HarborLayoutError(options.path, f"has no task {shown}{more} (option tasks)")
            order = list(dict.fromkeys(options.tasks))
        self._harbor = {name: harbor[name] for name in order}
        self._tasks = [self._task(harbor[name]) for name in order]
        self._by_id = {task.instance_id: task for task in self._tasks}

    def tasks(self) -> list[Task]:
        return list(self._tasks)

    def subsets(self) -> dict[str, list[str]]:
        return {"all": [task.instance_id for task in self._tasks]}

    def build_environment(self, task: Task, images: ImageStore, progress: Progress) -> bool:
        """Build the task's image from its Dockerfile unless present (its tag is a digest of
        the build context); a named image is used as it is (pulled by the worker if absent)."""
        harbor = self._own(task)
        if named_image(harbor, self.options.images) is not None:
            return False
        tag = self._image(harbor)
        if images.exists(tag):
            return False
        build_image(harbor, images, self.options.base_images, tag, progress=progress)
        return True

    def check_environment(self, task: Task, backend: SandboxBackend) -> None:
        """The worker's check before a task runs: its image is built here if it is not yet."""
        try:
            self.build_environment(task, backend.images, progress=lambda _line: None)
        except SandboxError as exc:
            raise BenchmarkError(
                f"the environment of {task.instance_id} cannot be built here: {exc}"
            ) from exc

    def prepare_repo(self, task: Task, dest: Path) -> str:
        """The image's work folder as a work tree with one commit (empty when the image has none)."""
        harbor = self._own(task)
        with tempfile.TemporaryDirectory(prefix="clade-harbor-", ignore_cleanup_errors=True) as tmp:
            try:
                source = self._image_store().copy_out(self._image(harbor), harbor.workdir, Path(tmp))
            except SandboxFileError:
                source = Path(tmp) / "empty"
                source.mkdir()
            return snapshot(source, dest, f"{harbor.name}: {harbor.workdir} of its environment")

    def grade(
        self, task: Task, diff: str, backend: SandboxBackend, image: str, timeout_s: float
    ) -> GradeReport:
        del image  # every task runs in its own environment image
        harbor = self._own(task)
        self.check_environment(task, backend)
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="clade-harbor-grade-", ignore_cleanup_errors=True) as tmp:
            work = Path(tmp)
            repo = work / "repo"
            self.prepare_repo(task, repo)
            applied = apply_patch(repo, diff)
            if not applied.applied:
                return unapplied(task, applied.error, started)
            reaching = reaches_verifier_logs(diff)
            if reaching is not None:
                return tampered_report(task, reaching, started)
            dropped = drop_test_infrastructure(repo, diff, keep=())
            return run_verifier(
                task,
                harbor,
                repo,
                image=self._image(harbor),
                backend=backend,
                limits=self._limits(harbor, timeout_s),
                work_dir=work,
                dropped=dropped,
            )

    def gold_patch(self, task: Task, backend: SandboxBackend, timeout_s: float) -> str:
        """What `solution/solve.sh` changes in the work folder, run in a sandbox of the image."""
        harbor = self._own(task)
        solution = harbor.solution
        if solution is None:
            raise BrokenTask(f"{harbor.name} has no solution/solve.sh: nothing to check the verifier against")
        self.check_environment(task, backend)
        with tempfile.TemporaryDirectory(prefix="clade-harbor-gold-", ignore_cleanup_errors=True) as tmp:
            repo = Path(tmp) / "repo"
            self.prepare_repo(task, repo)
            make_world_writable(repo)
            limit = min(timeout_s, harbor.agent_timeout_s or timeout_s)
            spec = SandboxSpec(
                image=self._image(harbor),
                mounts=[
                    Mount(source=repo, target=harbor.workdir, read_only=False),
                    Mount(source=solution.parent, target=SOLUTION_MOUNT, read_only=True),
                ],
                env={"HOME": "/tmp"},
                workdir=harbor.workdir,
                tmpfs_exec=True,
                labels={f"{LABEL_PREFIX}.purpose": "gold", f"{LABEL_PREFIX}.task": task.instance_id},
            )
            sandbox = backend.start(spec)
            try:
                run = sandbox.exec(
                    ["/bin/bash", f"{SOLUTION_MOUNT}/solve.sh"], timeout_s=limit, cwd=harbor.workdir
                )
            finally:
                sandbox.close()
            if run.timed_out:
                raise BrokenTask(f"{harbor.name}: solution/solve.sh timed out after {limit:g}s")
            git_ok(repo, "add", "--all")
            return git_ok(repo, "diff", "--cached", "--binary", "--no-color", "HEAD")

    def _task(self, harbor: HarborTask) -> Task:
        image = named_image(harbor, self.options.images) or image_tag(harbor, self.options.base_images)
        fingerprint = hashlib.sha256(f"{image}\0{harbor.workdir}".encode()).hexdigest()[:12]
        return Task(
            instance_id=harbor.name,
            repo=f"{_REPO_NAME}/{harbor.name}",
            base_commit=fingerprint,
            problem_statement=harbor.instruction,
            patch="",  # the gold is solve.sh's effect (gold_patch)
            test_patch="",
            FAIL_TO_PASS=[VERIFIER_TEST],
            PASS_TO_PASS=[],
            test_command=["/bin/bash", "/tests/test.sh"],
            repo_path=harbor.workdir,
            image=image,
            solve_timeout_s=harbor.agent_timeout_s,
        )

    def _image(self, harbor: HarborTask) -> str:
        """The task's image, as `_task` settled it at load (its tag hashes the whole build context)."""
        image = self._by_id[harbor.name].image
        if image is None:  # `_task` gives every Harbor task its own image
            raise BrokenTask(f"{harbor.name} has no image")
        return image

    def _limits(self, harbor: HarborTask, timeout_s: float) -> Limits:
        options = self.options
        return Limits(
            timeout_s=min(timeout_s, harbor.verifier_timeout_s or timeout_s),
            memory_mb=min(options.max_memory_mb, harbor.memory_mb or options.max_memory_mb),
            cpus=min(options.max_cpus, harbor.cpus or options.max_cpus),
            pass_reward=options.pass_reward,
        )

    def _own(self, task: Task) -> HarborTask:
        harbor = self._harbor.get(task.instance_id)
        if harbor is None:
            raise UnknownTask(f"harbor benchmark {self.options.path} has no task {task.instance_id!r}")
        return harbor

    def _image_store(self) -> ImageStore:
        with self._lock:
            if self._images is None:
                self._images = default_images()
            return self._images
