"""`LimitedDisk`: a folder that grows by at most its limit, in both enforcements, and leaves
no mount, loop device or image file behind."""

from __future__ import annotations

import errno
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from sandbox.disk import LimitedDisk, MiB, can_loop_mount, remove_abandoned_disks

LIMIT = 16 * MiB
needs_loop = pytest.mark.skipif(not can_loop_mount(), reason="needs root and loop devices")


def staged(tmp_path: Path) -> Path:
    folder = tmp_path / "staged"
    (folder / "repo" / "src").mkdir(parents=True)
    (folder / "repo" / "src" / "main.py").write_text("print('hi')\n" * 1000)
    os.symlink("src/main.py", folder / "repo" / "link")
    return folder


def write_mb(path: Path, mb: int) -> int:
    """MiB written before the file system refused (ENOSPC), up to `mb`."""
    chunk = os.urandom(MiB)
    written = 0
    with open(path, "wb") as handle:
        try:
            for _ in range(mb):
                handle.write(chunk)
                handle.flush()
                os.fsync(handle.fileno())
                written += 1
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    return written


def leftovers(tmp_path: Path) -> list[str]:
    mounts = [line for line in Path("/proc/self/mounts").read_text().splitlines() if str(tmp_path) in line]
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True, check=False).stdout
    return (
        mounts
        + [line for line in loops.splitlines() if str(tmp_path) in line]
        + [str(p) for p in tmp_path.glob("*.img")]
    )


@needs_loop
def test_loop_refuses_writes_past_the_limit_and_keeps_the_content(tmp_path: Path) -> None:
    with LimitedDisk.around(staged(tmp_path), tmp_path / "disk", LIMIT, "loop") as disk:
        assert disk.mode == "loop" and not (tmp_path / "staged").exists()
        assert (disk.path / "repo" / "src" / "main.py").read_text().startswith("print('hi')")
        assert os.readlink(disk.path / "repo" / "link") == "src/main.py"  # links stay links
        disk.start(on_exceeded=lambda: None)
        assert not disk.exceeded
        written = write_mb(disk.path / "repo" / "fill.bin", 3 * LIMIT // MiB)
        assert LIMIT // MiB - 2 <= written < 2 * LIMIT // MiB
        assert disk.exceeded
    assert leftovers(tmp_path) == []


def test_watch_calls_back_once_the_folder_passes_the_limit(tmp_path: Path) -> None:
    tripped = threading.Event()
    with LimitedDisk.around(staged(tmp_path), tmp_path / "disk", LIMIT, "watch") as disk:
        disk.start(on_exceeded=tripped.set)
        assert not disk.exceeded
        write_mb(disk.path / "repo" / "fill.bin", 2 * LIMIT // MiB)  # not refused: the host's disk
        assert tripped.wait(timeout=30)
        disk.stop_watching()
        assert disk.exceeded
    assert leftovers(tmp_path) == []


def test_a_folder_within_its_limit_is_not_exceeded(tmp_path: Path) -> None:
    modes = ["watch", "loop"] if can_loop_mount() else ["watch"]
    for mode in modes:
        root = tmp_path / mode
        root.mkdir()
        with LimitedDisk.around(staged(root), root / "disk", LIMIT, mode) as disk:  # type: ignore[arg-type]
            disk.start(on_exceeded=lambda: None)
            write_mb(disk.path / "half.bin", LIMIT // MiB // 2)
            disk.stop_watching()
            assert not disk.exceeded and disk.written_bytes >= LIMIT // 2
        assert leftovers(root) == []


@needs_loop
def settled_leftovers(folder: Path, timeout_s: float = 30) -> list[str]:
    """What is left once a lazy unmount has let go of its loop device, which it does a moment
    after `umount -l` returns."""
    deadline = time.monotonic() + timeout_s
    while (left := leftovers(folder)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def test_disks_of_a_process_that_is_gone_are_removed_and_live_ones_kept(tmp_path: Path) -> None:
    """A worker that died mid-run left its disk mounted: the next worker's start removes it
    (mount, loop device, image), and leaves a live process's disk alone."""
    gone = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True, check=True).stdout.strip()
    dead_root = tmp_path / f"clade-ws-{gone}-abc"
    live_root = tmp_path / f"clade-ws-{os.getpid()}-def"
    for root in (dead_root, live_root):
        root.mkdir()
    left = LimitedDisk.around(staged(dead_root), dead_root / "disk", LIMIT, "loop")  # never closed
    live = LimitedDisk.around(staged(live_root), live_root / "disk", LIMIT, "loop")
    try:
        assert remove_abandoned_disks(tmp_path) == [left.path]
        assert settled_leftovers(dead_root) == []
        assert len(leftovers(live_root)) >= 2  # its mount and its image are still there
        assert (live.path / "repo" / "src" / "main.py").exists()
    finally:
        live.close()
    assert leftovers(tmp_path) == []


@needs_loop
def test_the_disk_of_a_killed_process_not_yet_reaped_is_removed(tmp_path: Path) -> None:
    """A killed worker's process may stay a zombie until its parent reaps it; it holds no disk."""
    zombie = subprocess.Popen(["true"])
    stat = Path(f"/proc/{zombie.pid}/stat")
    deadline = time.monotonic() + 60
    while stat.read_text().rpartition(")")[2].split()[0] != "Z":
        assert time.monotonic() < deadline, "the child never exited"
        time.sleep(0.05)
    root = tmp_path / f"clade-ws-{zombie.pid}-abc"
    root.mkdir()
    disk = LimitedDisk.around(staged(root), root / "disk", LIMIT, "loop")  # never closed
    try:
        assert remove_abandoned_disks(tmp_path) == [disk.path]
    finally:
        zombie.wait()
    assert settled_leftovers(root) == []
