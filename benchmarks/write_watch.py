"""Every change made in one host folder while a sandbox runs, seen by the host's kernel (inotify).

The grader's results folder is bind-mounted into the grading sandbox; its plugin creates
the results file once and closes it. Anything else that happens there (a second write,
a rename over it, a deletion, a new file, a chmod) is a forgery attempt, and the kernel
tells the host about it however the sandbox's processes are arranged, and after they
are gone. Linux only, as Clade's sandboxes are.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000
WATCHED = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
)
_NAMES = {
    IN_MODIFY: "modify",
    IN_ATTRIB: "attrib",
    IN_CLOSE_WRITE: "close_write",
    IN_MOVED_FROM: "moved_from",
    IN_MOVED_TO: "moved_to",
    IN_CREATE: "create",
    IN_DELETE: "delete",
    IN_DELETE_SELF: "delete_self",
    IN_MOVE_SELF: "move_self",
    IN_Q_OVERFLOW: "overflow",
}
_HEADER = struct.Struct("iIII")


class WatchUnavailable(OSError):
    """The host cannot watch a folder (not Linux, or inotify refused)."""


@dataclass(frozen=True)
class Change:
    name: str  # "" for the folder itself
    kind: str  # "create", "close_write", ..., "overflow"


class WriteWatch:
    """`with WriteWatch(folder) as watch:` ... `watch.changes()` after the writers are gone."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._fd = -1
        self._seen: list[Change] = []

    def __enter__(self) -> WriteWatch:
        libc = _libc()
        fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            raise WatchUnavailable(ctypes.get_errno(), "inotify_init1 failed")
        if libc.inotify_add_watch(fd, os.fsencode(self.folder), WATCHED) < 0:
            code = ctypes.get_errno()
            os.close(fd)
            raise WatchUnavailable(code, f"cannot watch {self.folder}")
        self._fd = fd
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def changes(self) -> list[Change]:
        """Every change so far, in order (the kernel's queue is read as it is now)."""
        while True:
            try:
                data = os.read(self._fd, 64 * 1024)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                raise
            self._seen.extend(_parse(data))
        return list(self._seen)


def _parse(data: bytes) -> list[Change]:
    changes = []
    offset = 0
    while offset + _HEADER.size <= len(data):
        _wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
        offset += _HEADER.size
        name = data[offset : offset + length].rstrip(b"\0").decode(errors="replace")
        offset += length
        for bit, kind in _NAMES.items():
            if mask & bit:
                changes.append(Change(name, kind))
    return changes


def _libc() -> ctypes.CDLL:
    found = ctypes.util.find_library("c")
    if found is None:
        raise WatchUnavailable(errno.ENOSYS, "no C library to reach inotify")
    libc = ctypes.CDLL(found, use_errno=True)
    if not hasattr(libc, "inotify_init1"):
        raise WatchUnavailable(errno.ENOSYS, "this system has no inotify")
    return libc
