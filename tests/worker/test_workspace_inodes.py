"""An agent that fills its disk's inode table (many empty files) has filled its disk: the
evaluation records the agent's disk limit, never an error of the host's git.

Real git, a real `Workspace` on a loop-mounted disk. The agent's files are made directly in
the handed-over folder, as the sandbox user would make them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox.disk import MiB, can_loop_mount
from worker.workspace import DiskLimitExceeded, Workspace, init_repo

pytestmark = pytest.mark.skipif(not can_loop_mount(), reason="needs root and loop devices")
LIMIT_MB = 16


def _loop_workspace(tmp_path: Path) -> Workspace:
    ws = Workspace(
        tmp_path / "work", tmp_path / "sock", disk_limit_bytes=LIMIT_MB * MiB, disk_enforcement="loop"
    )
    (ws.repo / "a.txt").write_text("a\n")
    init_repo(ws.repo, "base")
    ws.hand_over()
    return ws


def _fill_inodes(folder: Path, leave: int) -> int:
    """Empty files (no data blocks) until at most `leave` inodes are free; how many were made."""
    folder.mkdir()
    made = 0
    while os.statvfs(folder).f_favail > leave:
        try:
            (folder / str(made)).touch()
        except OSError:
            break
        made += 1
    return made


def test_an_inode_table_filled_with_empty_files_is_the_agents_disk_limit(tmp_path: Path) -> None:
    with _loop_workspace(tmp_path) as ws:
        assert _fill_inodes(ws.repo / "many", leave=0) > 1000
        with pytest.raises(DiskLimitExceeded, match=f"more than {LIMIT_MB} MiB"):
            ws.diff(2 * MiB)


def test_git_running_out_of_inodes_the_agent_left_is_the_agents_disk_limit(tmp_path: Path) -> None:
    """A few inodes left, but more new files than that: git runs out while copying them."""
    with _loop_workspace(tmp_path) as ws:
        distinct = ws.repo / "distinct"
        distinct.mkdir()
        for i in range(300):
            (distinct / f"{i}.txt").write_text(f"file {i}\n")
        _fill_inodes(ws.repo / "many", leave=100)
        with pytest.raises(DiskLimitExceeded, match=f"more than {LIMIT_MB} MiB"):
            ws.diff(2 * MiB)
