"""The host's git over a work tree the agent wrote: nothing the agent planted runs on the host.

Real git, a real `Workspace` (its disk watched, so no mount is needed). The agent's writes are
made directly in the handed-over folders, as the sandbox user would make them.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from worker.workspace import GIT_IDENTITY, MAX_PATH_DEPTH, PatchTooLarge, Workspace

SUBMODULE = "vendor/lib"


def _git(folder: Path, *args: str) -> None:
    env = dict(os.environ) | GIT_IDENTITY
    subprocess.run(["git", *args], cwd=folder, env=env, check=True, capture_output=True)


def _repo_with_submodule(repo: Path) -> None:
    """A task repository whose base commit records a submodule (a gitlink), not checked out."""
    (repo / "a.txt").write_text("a\n")
    _git(repo, "init", "-q")
    _git(repo, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},{SUBMODULE}")
    _git(repo, "add", "a.txt")
    _git(repo, "commit", "-q", "--no-verify", "-m", "base")


def _plant_hostile_submodule(repo: Path, marker: Path) -> None:
    """What an agent can write: a git folder at the submodule's path whose config names a
    clean filter, and a file git must re-read through it."""
    sub = repo / SUBMODULE
    sub.mkdir(parents=True)
    (sub / "f").write_text("x\n")
    (sub / ".gitattributes").write_text("* filter=evil\n")
    _git(sub, "init", "-q")
    _git(sub, "add", ".")
    _git(sub, "commit", "-q", "--no-verify", "-m", "agent")
    os.utime(sub / "f", (978307200, 978307200))  # its index entry no longer matches: git re-reads it
    with (sub / ".git" / "config").open("a") as config:
        config.write(f'[filter "evil"]\n\tclean = "touch {marker}; cat"\n')


def test_a_submodules_git_config_planted_by_the_agent_never_runs_on_the_host(tmp_path: Path) -> None:
    marker = tmp_path / "host-ran-the-agents-filter"
    with Workspace(tmp_path / "work", tmp_path / "sock", disk_enforcement="watch") as ws:
        _repo_with_submodule(ws.repo)
        ws.hand_over()
        _plant_hostile_submodule(ws.repo, marker)
        (ws.repo / "a.txt").write_text("a\nb\n")
        diff = ws.diff(max_bytes=1_000_000)
    assert not marker.exists()
    assert "+b" in diff


def _deep_tree(top: Path, depth: int) -> None:
    """A folder `depth` levels deep (made by walking down, so no path is ever too long)."""
    here = os.getcwd()
    top.mkdir()
    os.chdir(top)
    try:
        for _ in range(depth):
            os.mkdir("d")
            os.chdir("d")
        Path("leaf.txt").write_text("leaf\n")
    finally:
        os.chdir(here)


def test_a_tree_deeper_than_any_repository_is_refused_and_removed(tmp_path: Path) -> None:
    """1500 folders deep: the host's own recursive removal of it (where the diff is graded)
    would fail; the diff is refused, and the workspace still goes."""
    with Workspace(tmp_path / "work", tmp_path / "sock", disk_enforcement="watch") as ws:
        _repo_with_submodule(ws.repo)
        ws.hand_over()
        _deep_tree(ws.repo / "deep", 1500)
        with pytest.raises(PatchTooLarge, match=f"1501 folders deep; the most is {MAX_PATH_DEPTH}"):
            ws.diff(max_bytes=1_000_000)
    assert not ws.root.exists()
