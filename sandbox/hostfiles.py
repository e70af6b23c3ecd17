"""Reading, on the host, a file that a sandbox could have written.

A sandbox can leave a FIFO (an `open` that blocks until someone writes), a device,
a socket or a symbolic link (to one of the host's own files) where the host expects
a file. Every host read of a sandbox-written file goes through here: the open never
blocks and never follows a link, and only a regular file is read, at most `max_bytes`.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

# Non-blocking: opening a FIFO returns at once (and reading one returns nothing), a
# terminal never becomes ours, a link in the last component is refused (ELOOP).
_SAFE_OPEN = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC


class NotARegularFile(OSError):
    """The path is there but is a link, a FIFO, a device, a socket or a folder."""


def open_regular_file(path: Path) -> int:
    """A read-only descriptor of `path` if it is a regular file; raises `NotARegularFile` when
    it is anything else, `FileNotFoundError` when it is missing."""
    try:
        fd = os.open(path, _SAFE_OPEN)
    except FileNotFoundError:
        raise
    except OSError as exc:
        # ELOOP: a link (O_NOFOLLOW); ENXIO: a socket; anything else is the same refusal.
        why = "a symbolic link" if exc.errno == errno.ELOOP else exc.strerror
        raise NotARegularFile(f"{path.name} is not a regular file ({why})") from exc
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotARegularFile(f"{path.name} is not a regular file ({file_kind(mode)})")
    return fd


def read_regular_file(path: Path, max_bytes: int) -> bytes | None:
    """At most `max_bytes` of `path` if it is a regular file; None when it is missing or is
    anything else (a link is never followed, a FIFO never waited on)."""
    try:
        fd = open_regular_file(path)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        return handle.read(max_bytes)


def regular_file_size(path: Path) -> int | None:
    """The size of `path` if it is a regular file (not followed if a link), else None."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def file_kind(mode: int) -> str:
    """What a file that is not a regular one is, in words (`a FIFO`), for refusals."""
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a folder"),
    ):
        if test(mode):
            return name
    return "a special file"
