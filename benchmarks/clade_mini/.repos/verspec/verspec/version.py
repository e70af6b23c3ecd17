"""Semantic versions: parsing, ordering, bumping."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import total_ordering

_VERSION = re.compile(
    r"v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
)


@total_ordering
@dataclass(frozen=True)
class Version:
    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...] = ()
    build: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Version:
        """Parse "1.2.3", "v1.2.3", "1.2.3-rc.1+build.5"; a ValueError for anything else."""
        match = _VERSION.fullmatch(text.strip())
        if match is None:
            raise ValueError(f"not a semantic version: {text!r}")
        major, minor, patch, prerelease, build = match.groups()
        return cls(
            int(major),
            int(minor),
            int(patch),
            tuple(prerelease.split(".")) if prerelease else (),
            tuple(build.split(".")) if build else (),
        )

    @classmethod
    def coerce(cls, value: Version | str) -> Version:
        return value if isinstance(value, Version) else cls.parse(value)

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

    @property
    def is_prerelease(self) -> bool:
        return bool(self.prerelease)

    def _key(self) -> tuple[object, ...]:
        """What ordering and equality look at (build metadata is not part of it)."""
        return (self.major, self.minor, self.patch, self.prerelease)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() == other._key()

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() < other._key()

    def bump(self, part: str) -> Version:
        """The next "major", "minor" or "patch" release: 1.2.3 -> 2.0.0, 1.3.0 or 1.2.4.

        A prerelease bumped by "patch" becomes its release: 1.2.3-rc.1 -> 1.2.3.
        """
        if part == "major":
            return Version(self.major + 1, 0, 0)
        if part == "minor":
            return Version(self.major, self.minor + 1, 0)
        if part == "patch":
            return Version(self.major, self.minor, self.patch if self.prerelease else self.patch + 1)
        raise ValueError(f"cannot bump {part!r}: use major, minor or patch")
