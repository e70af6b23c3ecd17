"""Reading git diffs (and plain unified diffs) file by file, without applying them."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass

_DIFF_HEADER = "diff --git "
_PATH_LINE = re.compile(r"^(?:--- |\+\+\+ |rename from |rename to |copy from |copy to )(.+)$")


@dataclass(frozen=True)
class FileDiff:
    """The lines of one file's diff, and the paths it names (old and new)."""

    text: str
    paths: tuple[str, ...]


def touched_paths(patch: str) -> list[str]:
    """Every path a diff touches (created, changed, deleted, renamed), in order."""
    return list(dict.fromkeys(path for part in split_files(patch) for path in part.paths))


def split_files(diff: str) -> list[FileDiff]:
    """One `FileDiff` per file of a git diff (or of a plain unified diff).

    Text before the first file (a commit message, say) is kept with the first one.
    """
    lines = diff.splitlines(keepends=True)
    starts = [index for index, line in enumerate(lines) if line.startswith(_DIFF_HEADER)]
    if not starts:  # a plain unified diff: each file starts at a "--- " line followed by "+++ "
        starts = [
            index
            for index, line in enumerate(lines[:-1])
            if line.startswith("--- ") and lines[index + 1].startswith("+++ ")
        ]
    if not starts:
        return [FileDiff(diff, ())] if diff.strip() else []
    starts[0] = 0
    bounds = [*starts, len(lines)]
    return [_file_diff(lines[start:end]) for start, end in itertools.pairwise(bounds)]


def _file_diff(lines: list[str]) -> FileDiff:
    paths: list[str] = []
    in_hunk = False
    for line in lines:
        if line.startswith("@@"):
            in_hunk = True  # hunk lines may look like headers ("--- x" is a deleted line)
        elif in_hunk and line[:1] in (" ", "+", "-", "\\"):
            continue
        elif line.startswith(_DIFF_HEADER):
            paths.extend(_header_paths(line[len(_DIFF_HEADER) :].rstrip("\n")))
        elif match := _PATH_LINE.match(line.rstrip("\n")):
            in_hunk = False
            path = _strip_prefix(_unquote(match.group(1).split("\t")[0]), line)
            if path is not None:
                paths.append(path)
    return FileDiff("".join(lines), tuple(dict.fromkeys(paths)))


def _header_paths(rest: str) -> Iterable[str]:
    """Paths of `a/x b/y`; unquoted names may contain spaces, so equal halves are tried first."""
    if rest.startswith('"'):
        names = re.findall(r'"(?:[^"\\]|\\.)*"|\S+', rest)
        return [_unquote(name)[2:] for name in names[:2]]
    half = (len(rest) - 1) // 2
    if rest[half : half + 3] == " b/" and rest[2:half] == rest[half + 3 :]:
        return [rest[2:half]]
    old, sep, new = rest.partition(" b/")
    return [old[2:], new] if sep else []


def _strip_prefix(path: str, line: str) -> str | None:
    if path == "/dev/null":
        return None
    if line.startswith(("--- ", "+++ ")) and path[:2] in ("a/", "b/"):
        return path[2:]
    return path


def _unquote(name: str) -> str:
    """Git's C-style quoting (`"a/t\\303\\251st.py"`) undone."""
    if len(name) < 2 or not (name.startswith('"') and name.endswith('"')):
        return name
    raw = name[1:-1].encode("utf-8").decode("unicode_escape")
    return raw.encode("latin-1").decode("utf-8", errors="replace")
