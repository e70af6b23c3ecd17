"""Very many empty files on a watched disk: they take no data blocks, but each takes an inode
of the host's file system, so each counts as a block of the limit."""

from __future__ import annotations

import threading
from pathlib import Path

from sandbox.disk import LimitedDisk, MiB

LIMIT = 4 * MiB


def _staged(tmp_path: Path) -> Path:
    folder = tmp_path / "staged"
    (folder / "repo").mkdir(parents=True)
    (folder / "repo" / "main.py").write_text("print('hi')\n")
    return folder


def test_watch_counts_empty_files_against_the_limit(tmp_path: Path) -> None:
    tripped = threading.Event()
    with LimitedDisk.around(_staged(tmp_path), tmp_path / "disk", LIMIT, "watch") as disk:
        disk.start(on_exceeded=tripped.set)
        many = disk.path / "repo" / "many"
        many.mkdir()
        for i in range(2 * LIMIT // 4096):  # 2048 files: twice the limit at a block each
            (many / str(i)).touch()
        assert tripped.wait(timeout=30)
        disk.stop_watching()
        assert disk.exceeded


def test_watch_leaves_a_few_files_within_the_limit(tmp_path: Path) -> None:
    with LimitedDisk.around(_staged(tmp_path), tmp_path / "disk", LIMIT, "watch") as disk:
        disk.start(on_exceeded=lambda: None)
        for i in range(100):
            (disk.path / "repo" / f"{i}.txt").touch()
        disk.stop_watching()
        assert not disk.exceeded
