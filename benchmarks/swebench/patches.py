"""The part of an agent's diff that is graded: its changes to test files are dropped.

SWE-bench resets the files its test patch touches before applying it (`git checkout
<base> <files>` in every eval script), so an agent's edits to those files never count.
Clade drops them from the diff instead, whole file by whole file, and with them the
agent's changes to anything that looks like a test (a path with a `test`, `tests`,
`testing` or `e2e` part, or a `conftest.py`), unless the reference fix changes that
file too. Without this an agent could add the test file the hidden tests would create,
so that they fail to apply and its own version runs in their place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from benchmarks.diffs import FileDiff, split_files, touched_paths

TEST_WORDS = frozenset({"test", "tests", "testing", "e2e"})
TEST_FILE_NAMES = frozenset({"conftest.py"})
_WORD_SPLIT = re.compile(r"[\s_/.\-]+")


@dataclass(frozen=True)
class GradedPatch:
    patch: str
    dropped: list[str] = field(default_factory=list)  # paths whose changes were left out


def is_test_path(path: str) -> bool:
    """True for paths SWE-bench would count as tests (`tests/x.py`, `foo_test.go`, `conftest.py`)."""
    name = path.rsplit("/", 1)[-1]
    return name in TEST_FILE_NAMES or not TEST_WORDS.isdisjoint(_WORD_SPLIT.split(path.lower()))


def graded_patch(diff: str, *, test_patch: str, gold_patch: str = "") -> GradedPatch:
    """`diff` without its changes to the test patch's files and to other test files
    (those the gold patch changes excepted)."""
    reset = set(touched_paths(test_patch))
    fixed = set(touched_paths(gold_patch))
    kept: list[str] = []
    dropped: list[str] = []
    for part in split_files(diff):
        names = set(part.paths)
        if names & reset or any(is_test_path(name) and name not in fixed for name in names):
            dropped.extend(name for name in part.paths if name not in dropped)
        else:
            kept.append(part.text)
    return GradedPatch(patch="".join(kept), dropped=dropped)


__all__ = ["FileDiff", "GradedPatch", "graded_patch", "is_test_path", "split_files", "touched_paths"]
