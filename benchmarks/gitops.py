"""Git on the host, for benchmarks: make a task's repository, apply patches, reset files.

Commands run with argument lists (no shell) and without the user's or the system's
git configuration, so that a repository built from the same files gets the same
commit sha on every machine.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path

from pydantic import BaseModel

# Fixed identity and dates: the base commit's sha depends only on the files.
_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "Clade",
    "GIT_AUTHOR_EMAIL": "clade@localhost",
    "GIT_COMMITTER_NAME": "Clade",
    "GIT_COMMITTER_EMAIL": "clade@localhost",
    "GIT_AUTHOR_DATE": "2025-01-01T00:00:00+0000",
    "GIT_COMMITTER_DATE": "2025-01-01T00:00:00+0000",
}
_IGNORED = shutil.ignore_patterns(
    ".git", "__pycache__", "*.pyc", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".benchmarks"
)
# What a benchmark folder may put into one task's repository: a sparse file of a terabyte costs
# nothing to make and would be written out in full by the copy.
MAX_REPO_FILE_BYTES = 256 * 1024 * 1024
MAX_REPO_BYTES = 1024 * 1024 * 1024
MAX_REPO_ENTRIES = 100_000
_DIFF_PATH = re.compile(r"^(?:---|\+\+\+) (?:a|b)/(.+?)\t?$", re.MULTILINE)


class GitError(RuntimeError):
    """A git command that must succeed failed."""


class TooLargeToCopy(OSError):
    """A folder that would become a task's repository holds too much to copy (`check_copy_size`):
    `path` is the file (or the folder) at fault, `reason` says what is too much."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason


def check_copy_size(source: Path, ignore: Callable[[str, list[str]], Iterable[str]] | None = None) -> None:
    """Raise TooLargeToCopy, naming the file or folder, if copying `source` (links as links, the
    names `ignore` leaves out skipped, as `shutil.copytree` does) would exceed the MAX_REPO_*
    limits. Sizes are what the files say they hold, so a sparse file counts at its full size."""
    total = entries = 0
    for folder, dirs, files in os.walk(source, followlinks=False):
        left_out = set(ignore(folder, dirs + files)) if ignore is not None else set()
        dirs[:] = [name for name in dirs if name not in left_out]
        for name in [*dirs, *files]:
            if name in left_out:
                continue
            entries += 1
            if entries > MAX_REPO_ENTRIES:
                raise TooLargeToCopy(source, f"holds more than {MAX_REPO_ENTRIES:,} files and folders")
            path = Path(folder) / name
            size = path.lstat().st_size
            if size > MAX_REPO_FILE_BYTES:
                most = f"a file of a task's repository may hold at most {MAX_REPO_FILE_BYTES:,}"
                raise TooLargeToCopy(path, f"is {size:,} bytes; {most}")
            total += size
            if total > MAX_REPO_BYTES:
                raise TooLargeToCopy(source, f"holds more than {MAX_REPO_BYTES:,} bytes (counted to {path})")


class PatchResult(BaseModel):
    applied: bool
    error: str = ""


def git(repo: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run git in `repo`; the caller checks the exit code (see `git_ok`)."""
    return subprocess.run(
        ["git", *args],
        cwd=repo,
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, **_GIT_ENV},
        check=False,
    )


def git_ok(repo: Path, *args: str, stdin: str | None = None) -> str:
    result = git(repo, *args, stdin=stdin)
    if result.returncode != 0:
        raise GitError(f"git {' '.join(args)} failed in {repo}: {result.stderr.strip()}")
    return result.stdout


def make_repo(source: Path, dest: Path, message: str) -> str:
    """Copy `source` to `dest` (new or empty) as a work tree with one commit; return its sha.

    A symbolic link is copied as a link, as git records it: followed, a link to /etc/passwd
    would put the host's file into the agent's repository."""
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"{dest} is not empty")
    check_copy_size(source, _IGNORED)
    shutil.copytree(
        source, dest, symlinks=True, ignore=_IGNORED, copy_function=shutil.copyfile, dirs_exist_ok=True
    )
    git_ok(dest, "init", "--quiet", "--initial-branch=main")
    git_ok(dest, "add", "--all")
    git_ok(dest, "commit", "--quiet", "--no-verify", "--message", message)
    return git_ok(dest, "rev-parse", "HEAD").strip()


def apply_patch(repo: Path, patch: str) -> PatchResult:
    """Apply a unified diff to the work tree, all or nothing. An empty patch applies."""
    if not patch.strip():
        return PatchResult(applied=True)
    if not patch.endswith("\n"):
        patch += "\n"  # git rejects a last hunk line without its newline as corrupt
    result = git(repo, "apply", "--whitespace=nowarn", "-", stdin=patch)
    if result.returncode != 0:
        return PatchResult(applied=False, error=result.stderr.strip()[-2000:])
    return PatchResult(applied=True)


def patch_paths(patch: str) -> list[str]:
    """Paths a unified diff touches (old and new names), in order of appearance."""
    return list(dict.fromkeys(_DIFF_PATH.findall(patch)))


def reset_paths(repo: Path, paths: Iterable[str]) -> None:
    """Put files back as they are in HEAD; delete those that HEAD does not have.

    Only git touches the work tree here: it never follows a symlink that a patch put in
    place of a folder, so nothing outside `repo` can be changed through one.
    """
    for path in paths:
        if git(repo, "cat-file", "-e", f"HEAD:{path}").returncode == 0:
            git_ok(repo, "checkout", "HEAD", "--", path)
        else:
            git_ok(repo, "clean", "--force", "-d", "-x", "--quiet", "--", path)


def snapshot(source: Path, dest: Path, message: str) -> str:
    """Copy the work tree `source` to `dest` (new or empty) as a repository with one commit.

    The commit holds what git tracks in `source`, ignored or not, and every other file that
    is not ignored (build output left in the work tree stays out of the agent's diff).
    Symlinks stay symlinks. Returns the commit's sha, the same for the same files.
    """
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"{dest} is not empty")
    # A folder that is no git work tree (a Harbor task's /app) has nothing tracked: all of it is kept.
    is_repo = git(source, "-c", "safe.directory=*", "rev-parse", "--show-toplevel").stdout.strip()
    inside = is_repo and Path(is_repo).resolve() == source.resolve()
    tracked = git_ok(source, "-c", "safe.directory=*", "ls-files", "-z") if inside else ""
    shutil.copytree(source, dest, symlinks=True, ignore=shutil.ignore_patterns(".git"), dirs_exist_ok=True)
    git_ok(dest, "init", "--quiet", "--initial-branch=main")
    git_ok(dest, "add", "--all")
    if tracked:
        git_ok(dest, "add", "--force", "--pathspec-from-file=-", "--pathspec-file-nul", stdin=tracked)
    git_ok(dest, "commit", "--quiet", "--no-verify", "--allow-empty", "--message", message)
    return git_ok(dest, "rev-parse", "HEAD").strip()
