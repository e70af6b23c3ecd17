"""A size-limited host folder for what a sandbox may write (its read-write bind mounts).

A bind mount writes straight to the host's disk: without a limit, an agent fills the
worker's (on `clade up`, the archive's) file system. `LimitedDisk` gives a folder whose
growth is bounded, in one of two ways:

- `loop` (when the worker can mount: root with loop devices, as a worker with the Docker
  socket is): a sparse image file formatted ext4 and loop-mounted at the folder, sized to
  what is in it plus the limit. A write past the limit fails with ENOSPC inside the
  sandbox; the host disk never holds more than the image.
- `watch` (any other host): the folder stays on the host's disk, and a thread measures it
  every `poll_s`; once it has grown by more than the limit, `on_exceeded` runs (the caller
  removes the sandbox). Between two polls the agent may write a little past the limit (at
  disk speed, up to about `poll_s` of writes).

Either way `exceeded` says afterwards whether the limit was reached, so the caller can
report it as the agent's failure. `GrowthWatch` is the watcher on its own (a backend uses it
over a sandbox's read-write mounts); `remove_abandoned_disks` clears the loop disks of a
process that died with them mounted.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Literal

log = logging.getLogger(__name__)

MiB = 1024 * 1024
Enforcement = Literal["auto", "loop", "watch"]
# Room for ext4's own tables (inodes, bitmaps): about 1.6% at one inode per 16 KiB, and a floor.
_FS_OVERHEAD_FRACTION = 0.03
_FS_OVERHEAD_FLOOR = 16 * MiB
# Less free room than this on a loop disk: the agent filled it.
_FULL_MARGIN = 1 * MiB
# Fewer free inodes than this: the agent filled the inode table (very many small files).
_FULL_INODE_MARGIN = 16
_UNMOUNT_TRIES = 50
# What a watched file or folder costs at least: an empty one takes no data blocks, but an inode
# of the host's file system (millions of them exhaust it), as it would a block on ext4.
ENTRY_BYTES = 4096
_SIZING_TRIES = 4


class DiskLimitError(RuntimeError):
    """A limited folder could not be set up (mkfs or mount failed where `loop` was required)."""


def can_loop_mount() -> bool:
    """Whether this process can make loop-mounted file systems (root, tools, a loop device) that
    the Docker engine then sees (`engine_shares_our_mounts`)."""
    return (
        os.geteuid() == 0
        and Path("/dev/loop-control").exists()
        and all(shutil.which(tool) for tool in ("mkfs.ext4", "mount", "umount", "losetup"))
        and engine_shares_our_mounts()
    )


def engine_shares_our_mounts(proc: Path = Path("/proc")) -> bool:
    """Whether a local Docker engine (`dockerd`) runs in this process's mount namespace.

    A mount made here reaches a bind mount of the engine's only then: a worker in a container
    beside the host's engine, or under `ip netns exec` (which unshares the mount namespace),
    mounts where the engine never looks, and its sandboxes would get an empty folder or none.
    An engine this process cannot see (remote, another pid namespace) counts as not sharing."""
    ours = os.readlink(proc / "self" / "ns" / "mnt")
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() == "dockerd":
                return os.readlink(entry / "ns" / "mnt") == ours
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return False


class LimitedDisk:
    """A folder (`path`) that may grow by at most `limit_bytes` once `start` is called.

    Make it with `LimitedDisk.around(staged, ...)`: the staged folder's content is moved
    onto the limited folder first. `close` unmounts and removes the image (loop), or stops
    the watcher (watch); the folder's content goes with it in the loop case.
    """

    def __init__(
        self, path: Path, limit_bytes: int, mode: Literal["loop", "watch"], image: Path | None
    ) -> None:
        self.path = path
        self.limit_bytes = limit_bytes
        self.mode = mode
        self._image = image
        self._baseline = 0
        self._watch: GrowthWatch | None = None
        self._mounted = mode == "loop"

    @classmethod
    def around(
        cls, staged: Path, dest: Path, limit_bytes: int, enforcement: Enforcement = "auto"
    ) -> LimitedDisk:
        """A limited folder at `dest` holding what `staged` holds (which is removed), with room
        for `limit_bytes` more. `enforcement` "auto" picks `loop` when `can_loop_mount()`."""
        mode = enforcement if enforcement != "auto" else ("loop" if can_loop_mount() else "watch")
        if mode == "watch":
            staged.rename(dest)
            disk = cls(dest, limit_bytes, "watch", None)
            disk._baseline = charged_bytes(dest)
            return disk
        wanted = tree_bytes(staged) + limit_bytes  # free room the file system must offer
        image = dest.with_name(dest.name + ".img")
        dest.mkdir()
        size = wanted + max(_FS_OVERHEAD_FLOOR, int(wanted * _FS_OVERHEAD_FRACTION))
        try:
            # ext4's own tables take a share that depends on its size: grow the image until the
            # mounted file system offers the room wanted (once or twice; mkfs takes milliseconds).
            for _ in range(_SIZING_TRIES):
                _format_and_mount(image, dest, size)
                free = os.statvfs(dest).f_bavail * os.statvfs(dest).f_frsize
                if free >= wanted:
                    break
                _run(["umount", str(dest)])
                size += int((wanted - free) * 1.1) + MiB
            else:
                raise DiskLimitError(f"could not make a file system with {wanted // MiB} MiB free")
        except DiskLimitError:
            subprocess.run(["umount", str(dest)], capture_output=True, check=False)
            image.unlink(missing_ok=True)
            raise
        disk = cls(dest, limit_bytes, "loop", image)
        try:
            (dest / "lost+found").rmdir()
            os.chmod(dest, stat.S_IMODE(os.stat(staged).st_mode))
            for entry in staged.iterdir():
                _move(entry, dest / entry.name)
            staged.rmdir()
            disk._baseline = disk.used_bytes()
        except BaseException:
            disk.close()
            raise
        return disk

    def start(self, on_exceeded: Callable[[], object]) -> None:
        """From now on the folder may grow by `limit_bytes`; in `watch` mode, `on_exceeded` runs
        (from the watcher thread) when it has grown more."""
        self._baseline = self.used_bytes()
        if self.mode == "watch":
            self._watch = GrowthWatch([self.path], self.limit_bytes, on_exceeded, baseline=self._baseline)

    def stop_watching(self) -> None:
        if self._watch is not None:
            self._watch.stop()

    @property
    def written_bytes(self) -> int:
        """How much the folder grew since `start`."""
        return max(self.used_bytes() - self._baseline, 0)

    @property
    def exceeded(self) -> bool:
        """Whether the folder reached its limit (the disk filled up, or the watcher tripped)."""
        if self._watch is not None and self._watch.exceeded:
            return True
        if self.mode == "loop" and self._mounted:
            return (
                self.written_bytes >= self.limit_bytes
                or self.free_bytes() < _FULL_MARGIN
                or self.free_inodes() < _FULL_INODE_MARGIN
            )
        return self.written_bytes > self.limit_bytes

    def used_bytes(self) -> int:
        if self.mode == "loop":
            vfs = os.statvfs(self.path)
            return (vfs.f_blocks - vfs.f_bfree) * vfs.f_frsize
        return charged_bytes(self.path)

    def free_bytes(self) -> int:
        vfs = os.statvfs(self.path)
        return vfs.f_bavail * vfs.f_frsize

    def free_inodes(self) -> int:
        return os.statvfs(self.path).f_favail

    def close(self) -> None:
        """Stop watching; unmount and remove the image (loop). Safe to call twice."""
        self.stop_watching()
        if self._mounted:
            self._unmount()
            self._mounted = False
        if self._image is not None:
            _detach_loops(self._image)
            self._image.unlink(missing_ok=True)

    def __enter__(self) -> LimitedDisk:
        return self

    def __exit__(
        self, _t: type[BaseException] | None, _e: BaseException | None, _tb: TracebackType | None
    ) -> None:
        self.close()

    def _unmount(self) -> None:
        # The engine may hold the mount a moment after a container is removed: try again,
        # then detach it lazily (the loop device goes once the last user lets go).
        for _ in range(_UNMOUNT_TRIES):
            done = subprocess.run(["umount", str(self.path)], capture_output=True, text=True)
            if done.returncode == 0:
                return
            time.sleep(0.1)
        log.warning("%s is busy; detaching it lazily: %s", self.path, done.stderr.strip())
        _run(["umount", "-l", str(self.path)])


def _detach_loops(image: Path, wait_s: float = 10.0) -> None:
    """Let go of the loop devices backing `image`. Unmounting frees an autoclear device only
    asynchronously (later still on a busy machine), so detach what is left and wait, within
    `wait_s`, until none is listed: a worker that makes a disk per sandbox must not run out."""
    deadline = time.monotonic() + wait_s
    while True:
        listed = subprocess.run(["losetup", "-j", str(image)], capture_output=True, text=True, check=False)
        devices = [line.split(":", 1)[0] for line in listed.stdout.splitlines() if line.strip()]
        if not devices or time.monotonic() > deadline:
            if devices:
                log.warning("loop devices %s of %s are still attached", ", ".join(devices), image)
            return
        for device in devices:  # gone meanwhile is fine: the kernel's autoclear got there first
            subprocess.run(["losetup", "-d", device], capture_output=True, check=False)
        time.sleep(0.05)


class GrowthWatch:
    """A thread that measures `folders` every `poll_s` and calls `on_exceeded` each time it finds
    them grown past `limit_bytes` over `baseline` (their size at the start, unless given)."""

    def __init__(
        self,
        folders: list[Path],
        limit_bytes: int,
        on_exceeded: Callable[[], object],
        *,
        baseline: int | None = None,
        poll_s: float = 0.25,
    ) -> None:
        self.folders = folders
        self.limit_bytes = limit_bytes
        self._baseline = baseline if baseline is not None else self.used_bytes()
        self._on_exceeded = on_exceeded
        self._poll_s = poll_s
        self._exceeded = threading.Event()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="disk-watch", daemon=True)
        self._thread.start()

    @property
    def exceeded(self) -> bool:
        return self._exceeded.is_set()

    def used_bytes(self) -> int:
        return sum(charged_bytes(folder) for folder in self.folders)

    def stop(self) -> None:
        """Stop watching; once this returns, `on_exceeded` is not running and will not run."""
        self._stopped.set()
        if self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        while not self._stopped.wait(self._poll_s):
            if self.used_bytes() - self._baseline > self.limit_bytes:
                if not self._exceeded.is_set():
                    log.warning("%s grew past its limit of %d MiB", self.folders[0], self.limit_bytes // MiB)
                self._exceeded.set()
                self._on_exceeded()


def owned_prefix(kind: str) -> str:
    """A folder-name prefix that says which process made it (for `remove_abandoned_disks`)."""
    return f"clade-{kind}-{os.getpid()}-"


def remove_abandoned_disks(root: Path) -> list[Path]:
    """Unmount (lazily) and delete the loop disks under `root` whose process is gone: a worker
    that died mid-run leaves its mounts, loop devices and image files. A folder's process is
    the pid in the first `clade-<kind>-<pid>-` folder above it; a live pid's disks stay."""
    removed: list[Path] = []
    for mountpoint in _mounts_under(root):
        pid = _owner_pid(mountpoint, root)
        if pid is None or _alive(pid):
            continue
        subprocess.run(["umount", "-l", str(mountpoint)], capture_output=True, check=False)
        mountpoint.with_name(mountpoint.name + ".img").unlink(missing_ok=True)
        removed.append(mountpoint)
    return removed


def _mounts_under(root: Path) -> list[Path]:
    try:
        table = Path("/proc/self/mounts").read_text()
    except OSError:
        return []
    found = []
    for line in table.splitlines():
        fields = line.split()
        if len(fields) < 2:
            continue
        # The mount table escapes spaces, tabs, newlines and backslashes as octal.
        path = Path(fields[1].encode().decode("unicode_escape"))
        if path.is_relative_to(root) and path != root:
            found.append(path)
    return found


def _owner_pid(path: Path, root: Path) -> int | None:
    for part in path.relative_to(root).parts:
        pieces = part.split("-")
        if len(pieces) >= 4 and pieces[0] == "clade" and pieces[2].isdigit():
            return int(pieces[2])
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A killed process that nobody has reaped yet still answers kill(0); a zombie holds no disk.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def charged_bytes(folder: Path) -> int:
    """What a watched tree counts against its limit: its blocks, each entry at least ENTRY_BYTES."""
    return tree_bytes(folder, min_entry_bytes=ENTRY_BYTES)


def tree_bytes(folder: Path, *, min_entry_bytes: int = 0) -> int:
    """Disk space the tree under `folder` takes (allocated blocks, each entry at least
    `min_entry_bytes`; links are not followed)."""
    total = 0
    stack = [str(folder)]
    while stack:
        current = stack.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue  # removed meanwhile, or unreadable: nothing to count
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            total += max(st.st_blocks * 512, min_entry_bytes)
            if stat.S_ISDIR(st.st_mode):
                stack.append(entry.path)
    return total


def _format_and_mount(image: Path, dest: Path, size: int) -> None:
    with open(image, "wb") as handle:
        handle.truncate(size)  # sparse: the host pays only for what is written
    _run(["mkfs.ext4", "-q", "-F", "-m", "0", "-O", "^has_journal", "-E", "nodiscard", str(image)])
    _run(["mount", "-o", "loop,nosuid,nodev", str(image), str(dest)])


def _move(source: Path, dest: Path) -> None:
    """Move across file systems keeping links as links, modes and owners."""
    if source.is_dir() and not source.is_symlink():
        shutil.copytree(source, dest, symlinks=True, copy_function=shutil.copy2)
        shutil.rmtree(source)
    else:
        shutil.move(str(source), str(dest))


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise DiskLimitError(f"{command[0]} failed: {(done.stderr or done.stdout).strip()[:500]}")
