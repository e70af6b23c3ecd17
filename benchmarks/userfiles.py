"""Reading a file of a user's benchmark folder, which may be hostile.

A folder handed to Clade can hold a FIFO (an `open` that blocks forever), a device
(/dev/zero never ends), a huge file, or a symbolic link to one of the host's own files
(/etc/passwd would become part of a task the agent reads). Every loader that reads such a
folder goes through here: a path that resolves outside the folder is refused, the open
never blocks, only a regular file is read, and at most `max_bytes` of it.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from sandbox.hostfiles import file_kind

# Statements, task files and patches are text a person wrote; 16 MB is far past any of them.
MAX_TEXT_BYTES = 16 * 1024 * 1024
# Non-blocking: opening a FIFO returns at once; a terminal never becomes ours.
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
# An id or a name shows up on one line of a log or a table: no line breaks, no escapes.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
MAX_NAME_CHARS = 200


class UserFileError(ValueError):
    """`path` cannot be used; the message names it and says why, on one line."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def inside(root: Path, path: Path) -> Path:
    """`path` with its links resolved; UserFileError when that lies outside `root`."""
    # Strings, not Path objects: cheaper, and a large folder calls this once per task.
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep):
        raise UserFileError(path, f"is a symbolic link to {real}, outside the folder {root}: refused")
    return Path(real)


def read_text(
    root: Path, path: Path, *, max_bytes: int = MAX_TEXT_BYTES, parent_checked: bool = False
) -> str:
    """The UTF-8 text of `path`, a regular file under `root`; FileNotFoundError when it is
    missing, UserFileError when it is anything else, too large or not UTF-8. With
    `parent_checked` (the caller has checked `path.parent` with `inside`), only a link in the
    last part costs resolving the path: a large folder is read without resolving every file."""
    if parent_checked:
        try:
            return read_named_text(path, max_bytes=max_bytes, follow=False)
        except _IsALink:
            pass
    return read_named_text(path, max_bytes=max_bytes, real=inside(root, path))


class _IsALink(Exception):
    pass


def read_named_text(
    path: Path, *, max_bytes: int = MAX_TEXT_BYTES, real: Path | None = None, follow: bool = True
) -> str:
    """As `read_text`, for a file the user named itself (no folder it must stay in)."""
    try:
        fd = os.open(path if real is None else real, _OPEN_FLAGS | (0 if follow else os.O_NOFOLLOW))
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:
            raise _IsALink from exc
        raise UserFileError(path, f"cannot be read: {exc.strerror}") from exc
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise UserFileError(path, f"is {file_kind(mode)}, not a regular file: refused")
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise UserFileError(path, f"is larger than {max_bytes} bytes: refused")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserFileError(path, f"is not UTF-8 text (byte {exc.start})") from exc


def folder_option(value: Path) -> Path:
    """`value` (`~` expanded) resolved, for an option that names a folder; ValueError (which
    the options model reports at the option) when it is not one, also when the path is too
    long for the system or names the home of no user."""
    try:
        path = value.expanduser()
        if path.is_dir():
            return path.resolve()
    except RuntimeError as exc:  # "~nobody"
        raise ValueError(f"{str(value)[:200]!r} is not a folder ({exc})") from exc
    except OSError as exc:  # a name too long, a loop of links
        raise ValueError(f"{str(value)[:200]!r} is not a folder ({exc.strerror})") from exc
    raise ValueError(f"{value} is not a folder")


def check_regular(path: Path) -> None:
    """UserFileError unless `path` (followed if a link) is a regular file; FileNotFoundError
    when nothing is there. For a file another library opens (a FIFO would hang it)."""
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise UserFileError(path, f"is {file_kind(mode)}, not a regular file: refused")


def parse_json(text: str, path: Path) -> Any:
    """`text` as JSON; UserFileError on bad JSON, a key given twice or nesting too deep."""
    try:
        return json.loads(text, object_pairs_hook=lambda pairs: _no_duplicates(pairs, path))
    except json.JSONDecodeError as exc:
        raise UserFileError(path, f"bad JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from exc
    except RecursionError as exc:
        # The decoder recurses per level: a few thousand `[` would otherwise be a traceback.
        raise UserFileError(path, "bad JSON: nested too deep") from exc


def name_problem(name: str) -> str | None:
    """Why `name` (a task id) cannot be used, or None."""
    if _CONTROL.search(name):
        return f"{name!r} holds a control character (a line break, an escape)"
    if len(name) > MAX_NAME_CHARS:
        return f"{name[:40]!r}... is longer than {MAX_NAME_CHARS} characters"
    return None


def _no_duplicates(pairs: list[tuple[str, Any]], path: Path) -> dict[str, Any]:
    # The json module keeps the last of two equal keys; a user would not know which counts.
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise UserFileError(path, f"bad JSON: the key {key!r} is given twice")
        out[key] = value
    return out
