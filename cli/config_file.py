"""Files a person hands the command line (a run configuration, benchmark options), read as the
service will take them: JSON, whatever the file says.

A file is read only if it is a regular file, and at most `MAX_FILE_BYTES` of it; it must be
UTF-8. Its text is YAML or JSON, read by the bounded loader (contracts/safe_yaml.py). Then what
YAML can say and JSON cannot is refused, naming the field, before anything is sent (a key given
twice, or one YAML reads as other than text, `1:` or `yes:`, the loader itself refuses): a date or
timestamp (`name: 2024-01-01`; quoted, it is text), `!!binary`, `!!set`, NaN and infinity
(`.nan`, `.inf`), and text with a lone surrogate (`"\\ud800"`) or a NUL.
"""

from __future__ import annotations

import datetime
import math
import os
import stat
from pathlib import Path
from typing import Any

from contracts.safe_yaml import MAX_YAML_CHARS, YamlInputError, load_yaml
from contracts.text import storable_text, text_problem

# The loader takes at most MAX_YAML_CHARS characters, and a UTF-8 character is at most 4 bytes:
# a file past this is refused unread, and no text the loader takes is refused here.
MAX_FILE_BYTES = 4 * MAX_YAML_CHARS


Loc = tuple[str | int, ...]


class ConfigFileError(ValueError):
    """A file that cannot be read, or whose value cannot be sent as JSON; the message names the
    file (and the field, when one is at fault)."""


def read_text_file(path: Path, *, max_bytes: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of the regular file at `path`, read to at most `max_bytes` + 1 bytes.

    A directory, FIFO, device or socket is refused before it is opened (so a FIFO with no writer
    does not block, and /dev/zero is not read), and again after, on what was opened."""
    try:
        _check_regular(path, os.stat(path).st_mode)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
        with open(fd, "rb") as file:
            _check_regular(path, os.fstat(file.fileno()).st_mode)
            data = file.read(max_bytes + 1)
    except FileNotFoundError as exc:
        raise ConfigFileError(f"{path}: no such file") from exc
    except OSError as exc:
        raise ConfigFileError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    if len(data) > max_bytes:
        raise ConfigFileError(f"{path}: the file is larger than {max_bytes:,} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigFileError(
            f"{path}: not UTF-8 text (line {line}: byte 0x{data[exc.start]:02x} at offset {exc.start});"
            " save it as UTF-8"
        ) from exc


def _check_regular(path: Path, mode: int) -> None:
    problem = _mode_problem(mode)
    if problem is not None:
        raise ConfigFileError(f"{path}: {problem}")


def _mode_problem(mode: int) -> str | None:
    if stat.S_ISDIR(mode):
        return "is a directory, not a file"
    if not stat.S_ISREG(mode):
        return "not a regular file (a FIFO, device or socket is not read)"
    return None


def not_a_file(path: Path) -> str | None:
    """Why `path` is no regular file to read (`no such file`, `is a directory, not a file`), or
    None when it is one."""
    try:
        return _mode_problem(os.stat(path).st_mode)
    except FileNotFoundError:
        return "no such file"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"


def load_config_file(path: Path) -> Any:
    """The JSON value of the YAML or JSON file at `path`; raises ConfigFileError naming the file
    and, when one is at fault, the field (`selection.params.alpha`, `stages.0.tasks`)."""
    text = read_text_file(path)
    try:
        data = load_yaml(text)
    except YamlInputError as exc:
        raise ConfigFileError(f"{path}: {exc}") from exc
    problem = json_problem(data)
    if problem is not None:
        loc, message = problem
        raise ConfigFileError(f"{path}: {field(loc)}{message}")
    return data


def field(loc: Loc) -> str:
    """`field a.b.0: ` for a problem at `loc`, or nothing for the document as a whole."""
    return f"field {'.'.join(str(part) for part in loc)}: " if loc else ""


def json_problem(data: Any) -> tuple[Loc, str] | None:
    """The first place (in document order) where `data`, as the YAML loader gave it, holds what
    JSON cannot carry, and why; None when `json.dumps(data, allow_nan=False)` would carry all of it
    as it is. Keys in the path are shown storable (a lone surrogate as U+FFFD)."""
    pending: list[tuple[Any, Loc]] = [(data, ())]
    while pending:
        value, loc = pending.pop()
        problem = _value_problem(value)
        if problem is not None:
            return loc, problem
        if isinstance(value, dict):
            children: list[tuple[Any, Loc]] = []
            for key, item in value.items():
                if not isinstance(key, str):
                    return (*loc, storable_text(str(key))), f"the key {_key_kind(key)}, not text; quote it"
                key_problem = text_problem(key)
                if key_problem is not None:
                    return (*loc, storable_text(key)), f"the key {key_problem}"
                children.append((item, (*loc, key)))
            pending.extend(reversed(children))
        elif isinstance(value, list | tuple):
            pending.extend(reversed([(item, (*loc, index)) for index, item in enumerate(value)]))
    return None


def _value_problem(value: Any) -> str | None:
    if value is None or isinstance(value, bool | int | list | tuple | dict):
        return None
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan (not a number) is not a JSON value"
        if math.isinf(value):
            sign = "-" if value < 0 else ""
            return f"{sign}.inf (infinity, or a number too large to be a float) is not a JSON value"
        return None
    if isinstance(value, str):
        return text_problem(value)
    if isinstance(value, datetime.datetime):
        return f"a timestamp ({value.isoformat()}) is not a JSON value; quote it to give it as text"
    if isinstance(value, datetime.date):
        return f"a date ({value.isoformat()}) is not a JSON value; quote it to give it as text"
    if isinstance(value, bytes):
        return "binary data (!!binary) is not a JSON value"
    if isinstance(value, set):
        return "a set (!!set) is not a JSON value; give a list"
    return f"a {type(value).__name__} is not a JSON value"


def _key_kind(key: Any) -> str:
    if key is None:
        return "is read as null"
    if isinstance(key, bool):
        return f"is read as {str(key).lower()}"
    if isinstance(key, int | float):
        return f"{key} is a number"
    return f"{key} is a {type(key).__name__}"
