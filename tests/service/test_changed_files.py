"""The files a child changes, as the archive lists them, are named exactly as on disk, whatever
git's quoting of the patch (real git, both quoting settings)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from service.archive.store import changed_files

ODD_NAMES = [
    "plain.py",
    "sp ace.txt",
    "tab\there",
    'quo"te',
    "back\\slash",
    "new\nline",
    "ünïcödé.md",
    "dir/é x.py",
]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@pytest.mark.parametrize("quote_path", ["true", "false"])
def test_odd_names_come_back_exact(tmp_path: Path, quote_path: str) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "gone.txt").write_text("old\n")
    (tmp_path / "edit me.txt").write_text("one\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "base")
    (tmp_path / "dir").mkdir()
    for name in ODD_NAMES:
        (tmp_path / name).write_text("new\n")
    (tmp_path / "gone.txt").unlink()
    # A content line that looks like a header must not count as one.
    (tmp_path / "edit me.txt").write_text("one\n++ b/not-a-file\n-- a/nor-this\n")
    git(tmp_path, "add", "-A")
    patch = git(tmp_path, "-c", f"core.quotepath={quote_path}", "diff", "--cached", "--binary", "HEAD")

    listed = changed_files(patch, limit=100)
    assert sorted(listed) == sorted([*ODD_NAMES, "gone.txt", "edit me.txt"])


def test_the_limit_keeps_the_first_files(tmp_path: Path) -> None:
    patch = "".join(
        f"diff --git a/f{i} b/f{i}\n--- a/f{i}\n+++ b/f{i}\n@@ -1 +1 @@\n-a\n+b\n" for i in range(30)
    )
    assert changed_files(patch) == [f"f{i}" for i in range(20)]
