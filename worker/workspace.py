"""Host folders for one sandboxed agent run, and reading back what the agent left.

Everything under `repo/` and `out/` was written by untrusted code. The host
never follows a link there, never reads more than a cap, and takes the diff
with its own private copy of the repository's git folder, so a `.git/config`
the agent planted (hooks, fsmonitor) is never used.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import subprocess
import tarfile
import tempfile
from pathlib import Path
from types import TracebackType

from sandbox.ownership import chmod_tree, give_to_sandbox_user

# Build litter an agent leaves by running its own code; never part of a patch.
IGNORED = "__pycache__/\n*.pyc\n.pytest_cache/\n.mypy_cache/\n.ruff_cache/\n"
GIT_SAFE = [
    *("-c", "core.hooksPath=/dev/null"),
    *("-c", "core.fsmonitor=false"),
    *("-c", "core.quotepath=false"),
    *("-c", "safe.directory=*"),  # the work tree belongs to the sandbox user after the run
]
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Clade",
    "GIT_AUTHOR_EMAIL": "clade@localhost",
    "GIT_COMMITTER_NAME": "Clade",
    "GIT_COMMITTER_EMAIL": "clade@localhost",
}


class Workspace:
    """`agent/`, `repo/`, `task/`, `out/` and `llm/` for one run; removed on exit."""

    def __init__(self, parent: Path | None = None, socket_parent: Path = Path("/tmp")) -> None:
        if parent is not None:
            parent.mkdir(parents=True, exist_ok=True)
        self.root = Path(tempfile.mkdtemp(prefix="clade-ws-", dir=parent))
        self.agent, self.repo, self.task, self.out = (
            self.root / name for name in ("agent", "repo", "task", "out")
        )
        for folder in (self.agent, self.repo, self.task, self.out):
            folder.mkdir()
        # A unix socket path must fit in 108 bytes, whatever the data directory: keep it short.
        socket_parent.mkdir(parents=True, exist_ok=True)
        self.llm = Path(tempfile.mkdtemp(prefix="clade-llm-", dir=socket_parent))
        self._private_git = self.root / "host.git"

    def __enter__(self) -> Workspace:
        return self

    def __exit__(
        self, _t: type[BaseException] | None, _e: BaseException | None, _tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        shutil.rmtree(self.llm, ignore_errors=True)

    def unpack_agent(self, tar_bytes: bytes) -> None:
        unpack(tar_bytes, self.agent)

    def write_statement(self, text: str) -> None:
        (self.task / "statement.md").write_text(text)

    def write_task_file(self, name: str, text: str) -> None:
        """Another file next to the statement (a plain name, never a path)."""
        if "/" in name or name in ("", ".", "..", "statement.md"):
            raise ValueError(f"not a task file name: {name!r}")
        (self.task / name).write_text(text)

    def hand_over(self) -> None:
        """Snapshot the repository's git state for the host, then give the sandbox user its folders."""
        if not (self.repo / ".git").is_dir():
            raise RuntimeError(f"{self.repo} is not a git work tree")
        shutil.copytree(self.repo / ".git", self._private_git, symlinks=True)
        exclude = self._private_git / "info" / "exclude"
        exclude.parent.mkdir(exist_ok=True)
        exclude.write_text(IGNORED)
        for folder in (self.agent, self.task, self.llm):
            chmod_tree(folder, 0o755, 0o644)
        for folder in (self.repo, self.out):
            give_to_sandbox_user(folder)

    def diff(self, max_bytes: int) -> str:
        """Every change under `repo/` against its base commit (new files included), as a patch."""
        env = {"GIT_DIR": str(self._private_git), "GIT_WORK_TREE": str(self.repo), "PATH": os.environ["PATH"]}
        env |= GIT_IDENTITY
        subprocess.run(
            ["git", *GIT_SAFE, "add", "-A", "."], cwd=self.repo, env=env, check=True, capture_output=True
        )
        result = subprocess.run(
            [
                "git",
                *GIT_SAFE,
                "diff",
                "--cached",
                "--binary",
                "--no-color",
                "--no-ext-diff",
                "--no-textconv",
                "HEAD",
            ],
            cwd=self.repo,
            env=env,
            check=True,
            capture_output=True,
        )
        if len(result.stdout) > max_bytes:
            raise PatchTooLarge(f"the agent's diff is {len(result.stdout)} bytes; the cap is {max_bytes}")
        return result.stdout.decode(errors="replace")

    def read_output(self, name: str, max_bytes: int) -> bytes | None:
        """A regular file the agent wrote to `out/`, or None; links are never followed."""
        return read_regular_file(self.out / name, max_bytes)


class PatchTooLarge(ValueError):
    pass


def unpack(tar_bytes: bytes, dest: Path) -> None:
    """Unpack an archive produced by `git archive` (the service's agent code)."""
    with tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:*") as tar:
        tar.extractall(dest, filter="data")


def init_repo(folder: Path, message: str) -> str:
    """Make `folder` a git work tree with one commit of its files; return the commit."""
    env = dict(os.environ) | GIT_IDENTITY
    for args in (["init", "-q"], ["add", "-A", "."], ["commit", "-q", "--no-verify", "-m", message]):
        subprocess.run(["git", *GIT_SAFE, *args], cwd=folder, env=env, check=True, capture_output=True)
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=folder, check=True, capture_output=True, text=True
    ).stdout.strip()


def read_regular_file(path: Path, max_bytes: int) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except (FileNotFoundError, OSError):
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read(max_bytes)
