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
import subprocess
import tarfile
import tempfile
from pathlib import Path
from types import TracebackType

from contracts.errors import InvalidAgentError
from sandbox.disk import Enforcement, LimitedDisk, MiB, owned_prefix
from sandbox.hostfiles import open_regular_file, regular_file_size
from sandbox.ownership import chmod_tree, give_to_sandbox_user

# Build litter an agent leaves by running its own code; never part of a patch.
IGNORED = "__pycache__/\n*.pyc\n.pytest_cache/\n.mypy_cache/\n.ruff_cache/\n"
GIT_SAFE = [
    *("-c", "core.hooksPath=/dev/null"),
    *("-c", "core.fsmonitor=false"),
    *("-c", "core.quotepath=false"),
    *("-c", "safe.directory=*"),  # the work tree belongs to the sandbox user after the run
]
CHUNK_BYTES = 64 * 1024
MAX_NAME_CHARS = 300  # of an agent's file name quoted in a failure
# Folders above a changed file, at most: far more than any repository's, far fewer than the
# recursion (shutil.rmtree, one frame per folder) of whoever unpacks the patch could take.
MAX_PATH_DEPTH = 100
TAIL_BYTES = 4_000
# Changed files larger than this many times the patch cap together are refused before git
# copies them (only very repetitive content could still make a patch under the cap).
CHANGED_BYTES_PER_PATCH_BYTE = 16
DEFAULT_DISK_LIMIT_BYTES = 2048 * MiB
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Clade",
    "GIT_AUTHOR_EMAIL": "clade@localhost",
    "GIT_COMMITTER_NAME": "Clade",
    "GIT_COMMITTER_EMAIL": "clade@localhost",
}


class Workspace:
    """`agent/`, `repo/`, `task/`, `out/` and `llm/` for one run; removed on exit.

    `repo/` and `out/` (the agent's writable folders) and the host's private git copy are
    staged on the host's disk, then moved by `hand_over` onto a `LimitedDisk` that lets them
    grow by at most `disk_limit_bytes` while the agent runs (see `sandbox.disk`).
    """

    def __init__(
        self,
        parent: Path | None = None,
        socket_parent: Path = Path("/tmp"),
        *,
        disk_limit_bytes: int = DEFAULT_DISK_LIMIT_BYTES,
        disk_enforcement: Enforcement = "auto",
    ) -> None:
        if parent is not None:
            parent.mkdir(parents=True, exist_ok=True)
        self.root = Path(tempfile.mkdtemp(prefix=owned_prefix("ws"), dir=parent))
        self.agent, self.task = self.root / "agent", self.root / "task"
        self._writable = self.root / "staged"
        self.repo, self.out = self._writable / "repo", self._writable / "out"
        for folder in (self.agent, self.task, self._writable, self.repo, self.out):
            folder.mkdir()
        # A unix socket path must fit in 108 bytes, whatever the data directory: keep it short.
        socket_parent.mkdir(parents=True, exist_ok=True)
        self.llm = Path(tempfile.mkdtemp(prefix="clade-llm-", dir=socket_parent))
        self._private_git = self._writable / "host.git"
        self._disk_limit_bytes = disk_limit_bytes
        self._disk_enforcement: Enforcement = disk_enforcement
        self.disk: LimitedDisk | None = None

    def __enter__(self) -> Workspace:
        return self

    def __exit__(
        self, _t: type[BaseException] | None, _e: BaseException | None, _tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        if self.disk is not None:
            self.disk.close()
        remove_tree(self.root)
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
        self.disk = LimitedDisk.around(
            self._writable, self.root / "disk", self._disk_limit_bytes, self._disk_enforcement
        )
        self.repo, self.out = self.disk.path / "repo", self.disk.path / "out"
        self._private_git = self.disk.path / "host.git"
        for folder in (self.agent, self.task, self.llm):
            chmod_tree(folder, 0o755, 0o644)
        for folder in (self.repo, self.out):
            give_to_sandbox_user(folder)

    def diff(self, max_bytes: int) -> str:
        """Every change under `repo/` against its base commit (new files included), as a patch.

        Raises `DiskLimitExceeded` when the agent filled its folders, `PatchTooLarge` when a
        changed file, all of them together, or the patch itself is over what `max_bytes` allows;
        files are measured before `git add` copies them, and the patch is read at most
        `max_bytes + 1` bytes far.
        """
        self.check_disk()
        env = {"GIT_DIR": str(self._private_git), "GIT_WORK_TREE": str(self.repo), "PATH": os.environ["PATH"]}
        env |= GIT_IDENTITY
        self._refuse_large_changes(env, max_bytes)
        added = subprocess.run(
            ["git", *GIT_SAFE, "add", "-A", "."], cwd=self.repo, env=env, capture_output=True
        )
        if added.returncode != 0:
            self.check_disk(after_git_failed=True)
            raise subprocess.CalledProcessError(added.returncode, added.args, added.stdout, added.stderr)
        command = [
            "git",
            *GIT_SAFE,
            "diff",
            "--cached",
            "--binary",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "HEAD",
        ]
        patch = read_capped(command, cwd=self.repo, env=env, max_bytes=max_bytes)
        if patch is None:
            raise PatchTooLarge(f"the agent's diff is over the cap of {max_bytes} bytes")
        return patch.decode(errors="replace")

    def check_disk(self, *, after_git_failed: bool = False) -> None:
        """Raise `DiskLimitExceeded` if the agent's folders reached their limit (or, after git
        failed to copy the changes, have too little room left for it)."""
        disk = self.disk
        if disk is None:
            return
        low = after_git_failed and disk.mode == "loop" and disk.free_bytes() < disk.limit_bytes // 4
        if disk.exceeded or low:
            raise DiskLimitExceeded(disk_limit_message(disk.limit_bytes))

    def _refuse_large_changes(self, env: dict[str, str], max_bytes: int) -> None:
        listed = subprocess.run(
            # Never into a submodule: its git folder (config, filters) is the agent's.
            [
                "git",
                *GIT_SAFE,
                "status",
                "--porcelain",
                "-z",
                "--untracked-files=all",
                "--no-renames",
                "--ignore-submodules=all",
            ],
            cwd=self.repo,
            env=env,
            capture_output=True,
        )
        if listed.returncode != 0:
            self.check_disk(after_git_failed=True)  # no room left for git's index: the agent's doing
            raise subprocess.CalledProcessError(listed.returncode, listed.args, listed.stdout, listed.stderr)
        total = 0
        for entry in listed.stdout.split(b"\0"):
            if len(entry) < 4:
                continue
            name = os.fsdecode(entry[3:])
            if name.count("/") > MAX_PATH_DEPTH:
                raise PatchTooLarge(
                    f"the agent wrote {name[:MAX_NAME_CHARS]}, {name.count('/')} folders deep;"
                    f" the most is {MAX_PATH_DEPTH}"
                )
            size = regular_file_size(self.repo / name) or 0
            if size > max_bytes:
                raise PatchTooLarge(
                    f"the agent wrote {name[:MAX_NAME_CHARS]}, {size} bytes;"
                    f" the patch cap is {max_bytes} bytes"
                )
            total += size
        if total > CHANGED_BYTES_PER_PATCH_BYTE * max_bytes:
            raise PatchTooLarge(
                f"the agent's changed files hold {total} bytes together; the patch cap is {max_bytes} bytes"
            )

    def read_output(self, name: str, max_bytes: int) -> bytes | None:
        """At most `max_bytes` of a file the agent wrote to `out/`, None if it wrote none;
        raises `NotARegularFile` for a link, a FIFO, a device or a socket (never followed,
        never waited on)."""
        try:
            fd = open_regular_file(self.out / name)
        except FileNotFoundError:
            return None
        with os.fdopen(fd, "rb") as handle:
            return handle.read(max_bytes)


class PatchTooLarge(ValueError):
    pass


class DiskLimitExceeded(ValueError):
    """The agent wrote more to its folders than the worker's disk limit allows."""


def disk_limit_message(limit_bytes: int) -> str:
    return (
        f"the agent wrote more than {limit_bytes // MiB} MiB to its folders"
        " (the worker's limit, CLADE_SANDBOX_DISK_MB)"
    )


def remove_tree(path: Path) -> None:
    """Remove `path` however deep the agent made it (`shutil.rmtree` recurses once per folder and
    raises RecursionError on a deep enough tree); never crossing into a mounted file system."""
    subprocess.run(["rm", "-rf", "--one-file-system", "--", str(path)], capture_output=True, check=False)


def read_capped(command: list[str], *, cwd: Path, env: dict[str, str], max_bytes: int) -> bytes | None:
    """`command`'s stdout, read as it comes; None (and the command killed) once it passes
    `max_bytes`, so an oversized output is never held whole in memory."""
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=errors)
        assert process.stdout is not None
        chunks: list[bytes] = []
        size = 0
        with process.stdout:
            while chunk := process.stdout.read(CHUNK_BYTES):
                size += len(chunk)
                if size > max_bytes:
                    process.kill()
                    process.wait()
                    return None
                chunks.append(chunk)
        if process.wait() != 0:
            errors.seek(0)
            raise subprocess.CalledProcessError(process.returncode, command, b"", errors.read(TAIL_BYTES))
    return b"".join(chunks)


def unpack(tar_bytes: bytes, dest: Path) -> None:
    """Unpack an archive produced by `git archive` (the service's agent code); raises
    `InvalidAgentError` naming a member that would land outside `dest` (a link through links)."""
    with tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:*") as tar:
        try:
            tar.extractall(dest, filter="data")
        except tarfile.FilterError as exc:
            raise InvalidAgentError(f"its code cannot be unpacked: {str(exc)[:MAX_NAME_CHARS]}") from exc


def init_repo(folder: Path, message: str) -> str:
    """Make `folder` a git work tree with one commit of its files; return the commit."""
    env = dict(os.environ) | GIT_IDENTITY
    for args in (["init", "-q"], ["add", "-A", "."], ["commit", "-q", "--no-verify", "-m", message]):
        subprocess.run(["git", *GIT_SAFE, *args], cwd=folder, env=env, check=True, capture_output=True)
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=folder, check=True, capture_output=True, text=True
    ).stdout.strip()
