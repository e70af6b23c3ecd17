"""Telling a full disk from every other failure of a write.

A full disk must not look like a bad patch (final for the worker) or a bug (500): it is
answered 507 and retried. Each layer says so in its own way: the OS with ENOSPC or EDQUOT,
SQLite with SQLITE_FULL, PostgreSQL with SQLSTATE 53100, git only in its message (and not
even there when a ref's lock file cannot be written: then the space left where the archive
lives is asked).
"""

from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy.exc import DBAPIError

from contracts.errors import StorageFullError

DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
GIT_DISK_FULL_MESSAGES = ("No space left on device", "Disk quota exceeded")
POSTGRES_DISK_FULL = "53100"
# Below this much free space a failed git write is put down to the disk.
NEARLY_FULL_BYTES = 1024 * 1024


def storage_full(detail: str, folder: Path) -> StorageFullError:
    return StorageFullError(f"the archive's disk is full: {detail}; free space in {folder}")


def is_disk_full(exc: BaseException) -> bool:
    """Whether the error, or one it came from, is the OS or a database saying the disk is full."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, StorageFullError):
            return True
        if isinstance(current, OSError) and current.errno in DISK_FULL_ERRNOS:
            return True
        code = getattr(current, "sqlite_errorcode", None) if isinstance(current, sqlite3.Error) else None
        if isinstance(code, int) and code & 0xFF == sqlite3.SQLITE_FULL:  # the primary code
            return True
        if getattr(current, "sqlstate", None) == POSTGRES_DISK_FULL:  # psycopg's DiskFull
            return True
        orig = current.orig if isinstance(current, DBAPIError) else None
        current = orig if isinstance(orig, BaseException) else current.__cause__ or current.__context__
    return False


def git_says_full(stderr: str, folder: Path, *, ask_disk: bool) -> bool:
    """A failed git command ran out of space: it says so, or (`ask_disk`, for the commands that
    name no cause) the disk holding `folder` has next to nothing left."""
    if any(message in stderr for message in GIT_DISK_FULL_MESSAGES):
        return True
    if not ask_disk:
        return False
    try:
        stats = os.statvfs(folder)
    except OSError:
        return False
    no_inodes = stats.f_files > 0 and stats.f_favail == 0
    return no_inodes or stats.f_bavail * stats.f_frsize < NEARLY_FULL_BYTES


@contextmanager
def full_disk_refused(folder: Path) -> Iterator[None]:
    """Turn a full disk met inside the block into StorageFullError; everything else passes as is."""
    try:
        yield
    except StorageFullError:
        raise
    except (OSError, DBAPIError) as exc:
        full = as_storage_full(exc, folder)
        if full is None:
            raise
        raise full from exc


def as_storage_full(exc: OSError | DBAPIError, folder: Path) -> StorageFullError | None:
    """The StorageFullError for a full disk (None for any other error): the folder to free, or the
    database server when it is a database other than SQLite (whose file is in the data folder)."""
    if not is_disk_full(exc):
        return None
    if isinstance(exc, DBAPIError) and not isinstance(exc.orig, sqlite3.Error):
        detail = str(exc.orig).strip().splitlines()[0] if str(exc.orig).strip() else "disk full"
        return StorageFullError(f"the archive's disk is full: {detail}; free space on the database server")
    lines = str(exc.orig if isinstance(exc, DBAPIError) else exc).strip().splitlines()
    return storage_full(lines[0] if lines else "no space left", folder)
