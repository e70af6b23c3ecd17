"""Copy the repository out of an instance image onto the host, without running the image.

`docker create` (never started, no network) and the engine's archive API; the
container is removed afterwards. The copy keeps the image's git folder, so the base
commit and its history are there for the eval script's `git checkout <base> <tests>`.
"""

from __future__ import annotations

import logging
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from docker.errors import DockerException, ImageNotFound

from benchmarks.base import BrokenTask
from benchmarks.gitops import git, git_ok
from benchmarks.swebench.tasks import SWEbenchTask
from sandbox.base import BACKEND_LABEL, OWNER_LABEL, ROLE_LABEL, SandboxError
from sandbox.images.build import ensure_task_image

log = logging.getLogger("clade.swebench")
EXPORT_ROLE = "swebench-export"
_LABELS = {OWNER_LABEL: "clade-swebench", ROLE_LABEL: EXPORT_ROLE, BACKEND_LABEL: "docker"}


def export_repo(client: Any, image: str, source: str, dest: Path) -> Path:
    """Write `source` (a folder of `image`) to `dest/<its name>`; return that path."""
    try:
        try:
            container = client.containers.create(image, command=["true"], network_mode="none", labels=_LABELS)
        except ImageNotFound:
            # Absent here: pulled by name (PullFailed, naming the image, when it cannot be).
            ensure_task_image(client, image, progress=log.info)
            container = client.containers.create(image, command=["true"], network_mode="none", labels=_LABELS)
    except (DockerException, OSError) as exc:
        raise SandboxError(f"cannot create a container from {image}: {exc}") from exc
    try:
        with tempfile.TemporaryFile() as buffer:
            try:
                chunks, _stat = container.get_archive(source)
                for chunk in chunks:
                    buffer.write(chunk)
            except DockerException as exc:
                raise BrokenTask(f"{image} has no {source}: {exc}") from exc
            buffer.seek(0)
            dest.mkdir(parents=True, exist_ok=True)
            with tarfile.open(fileobj=buffer, mode="r|") as archive:
                # "tar", not "data": repositories hold symlinks that point outside them; it
                # still refuses members that would land outside `dest`, even through a link.
                archive.extractall(dest, filter="tar")
    finally:
        container.remove(force=True)
    return dest / Path(source).name


def export_base(client: Any, task: SWEbenchTask, dest: Path) -> Path:
    """The task's repository copied out of its image to `dest`; BrokenTask unless its HEAD
    is the instance's base commit."""
    repo = export_repo(client, task.image, task.repo_path, dest)
    head = head_commit(repo)
    if head != task.base_commit:
        raise BrokenTask(
            f"{task.instance_id}: {task.repo_path} in {task.image} is at {head or 'no commit'}, "
            f"the instance says {task.base_commit}"
        )
    return repo


def snapshot(source: Path, dest: Path, message: str) -> str:
    """Copy the work tree `source` to `dest` (new or empty) as a repository with one commit.

    The commit holds what git tracks in `source`, ignored or not, and every other file that
    is not ignored (build output left in the work tree stays out of the agent's diff).
    Symlinks stay symlinks. Returns the commit's sha, the same for the same files.
    """
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"{dest} is not empty")
    tracked = git_ok(source, "-c", "safe.directory=*", "ls-files", "-z")
    shutil.copytree(source, dest, symlinks=True, ignore=shutil.ignore_patterns(".git"), dirs_exist_ok=True)
    git_ok(dest, "init", "--quiet", "--initial-branch=main")
    git_ok(dest, "add", "--all")
    if tracked:
        git_ok(dest, "add", "--force", "--pathspec-from-file=-", "--pathspec-file-nul", stdin=tracked)
    git_ok(dest, "commit", "--quiet", "--no-verify", "--allow-empty", "--message", message)
    return git_ok(dest, "rev-parse", "HEAD").strip()


def head_commit(repo: Path) -> str:
    """The commit checked out in `repo` ("" when it is not a git work tree)."""
    result = git(repo, "-c", "safe.directory=*", "rev-parse", "--verify", "HEAD")
    return result.stdout.strip() if result.returncode == 0 else ""
