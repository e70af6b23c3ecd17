"""The polyglot benchmark's options (`benchmark.options` of a run configuration)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator

from benchmarks.base import OptionError
from benchmarks.userfiles import folder_option
from contracts.benchmark_options import LanguageName, Options

__all__ = ["PolyglotOptions", "PolyglotOptionsError"]


class PolyglotOptionsError(OptionError):
    """An option is wrong, found when the benchmark loads; `field` names it (e.g. "languages.1")."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(field, f"polyglot option {field!r}: {message}")


class PolyglotOptions(Options):
    # A folder in the Aider polyglot layout: <root>/<language>/exercises/practice/<exercise>/;
    # None: the Python fixtures shipped with Clade.
    root: Path | None = None
    # Languages to load; default: every language folder under `root`.
    languages: list[LanguageName] | None = Field(default=None, min_length=1)
    # Exercises to load, as "<exercise>" (in any loaded language) or "<language>/<exercise>";
    # default: all of them.
    exercises: list[str] | None = Field(default=None, min_length=1)
    # The languages whose toolchain the sandbox image has, when known; when None, the
    # image is probed for any language not in the base image (Python is).
    available_languages: list[LanguageName] | None = None
    # The image that runs and grades the exercises of every language but Python (which
    # runs in Clade's base image); default: the toolchain image that
    # `clade images build --benchmark polyglot` builds.
    image: str | None = Field(default=None, min_length=1)

    @field_validator("root")
    @classmethod
    def _root_is_a_folder(cls, value: Path | None) -> Path | None:
        if value is None:
            return None
        return folder_option(value)

    @field_validator("languages", "exercises")
    @classmethod
    def _no_duplicates(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and len(set(value)) != len(value):
            raise ValueError("lists a name twice")
        return value
