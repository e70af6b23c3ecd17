"""Copy the repository out of an instance image onto the host, without running the image.

The sandbox backend copies it (`ImageStore.copy_out`; Docker: a container created, never
started, no network, read through the engine's archive API, then removed). The copy keeps
the image's git folder, so the base commit and its history are there for the eval script's
`git checkout <base> <tests>`.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.base import BrokenTask
from benchmarks.gitops import git
from benchmarks.swebench.tasks import SWEbenchTask
from sandbox.base import ImageStore, SandboxFileError


def export_repo(images: ImageStore, image: str, source: str, dest: Path) -> Path:
    """Write `source` (a folder of `image`) to `dest/<its name>`; return that path."""
    try:
        return images.copy_out(image, source, dest)
    except SandboxFileError as exc:
        raise BrokenTask(str(exc)) from exc


def export_base(images: ImageStore, task: SWEbenchTask, dest: Path) -> Path:
    """The task's repository copied out of its image to `dest` (pulled when absent); BrokenTask
    unless its HEAD is the instance's base commit."""
    repo = export_repo(images, task.image, task.repo_path, dest)
    head = head_commit(repo)
    if head != task.base_commit:
        raise BrokenTask(
            f"{task.instance_id}: {task.repo_path} in {task.image} is at {head or 'no commit'}, "
            f"the instance says {task.base_commit}"
        )
    return repo


def head_commit(repo: Path) -> str:
    """The commit checked out in `repo` ("" when it is not a git work tree)."""
    result = git(repo, "-c", "safe.directory=*", "rev-parse", "--verify", "HEAD")
    return result.stdout.strip() if result.returncode == 0 else ""
