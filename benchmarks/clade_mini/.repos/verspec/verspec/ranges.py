"""Version ranges: "^1.2.0", ">=1.0.0 <2.0.0 || 3.x"-style sets of versions."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable

from verspec.version import Version

_COMPARATOR = re.compile(r"(>=|<=|>|<|=|~|\^)?(.+)")
_OPERATORS: dict[str, Callable[[Version, Version], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "=": operator.eq,
}
Comparator = tuple[str, Version]


class Range:
    """A set of versions, written as in README.md."""

    def __init__(self, text: str):
        self.text = text
        self.alternatives: list[list[Comparator]] = [
            self._parse_all(part) for part in text.split("||")
        ]

    def __repr__(self) -> str:
        return f"Range({self.text!r})"

    def contains(self, version: Version | str) -> bool:
        version = Version.coerce(version)
        return any(
            all(_OPERATORS[op](version, bound) for op, bound in comparators)
            for comparators in self.alternatives
        )

    def _parse_all(self, text: str) -> list[Comparator]:
        comparators: list[Comparator] = []
        for word in text.split():
            comparators.extend(self._parse_one(word))
        if not text.strip():
            raise ValueError(f"empty alternative in range {self.text!r}")
        return comparators

    def _parse_one(self, word: str) -> list[Comparator]:
        if word == "*":
            return []
        match = _COMPARATOR.fullmatch(word)
        if match is None:
            raise ValueError(f"bad comparator {word!r} in range {self.text!r}")
        op, version_text = match.group(1) or "=", match.group(2)
        version = Version.parse(version_text)
        if op == "~":
            return [(">=", version), ("<", Version(version.major, version.minor + 1, 0))]
        if op == "^":
            return [(">=", version), ("<", Version(version.major + 1, 0, 0))]
        return [(op, version)]


def max_satisfying(versions: Iterable[Version | str], range_: Range | str) -> Version | None:
    """The highest of `versions` in the range, or None when none is."""
    allowed = range_ if isinstance(range_, Range) else Range(range_)
    matching = [v for v in map(Version.coerce, versions) if allowed.contains(v)]
    return max(matching, default=None)
