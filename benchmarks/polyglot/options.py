"""The polyglot benchmark's options, as a run configuration gives them (`benchmark.options`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from benchmarks.base import BenchmarkError
from benchmarks.polyglot.fixtures import FIXTURES_DIR
from benchmarks.polyglot.languages import LanguageName


class PolyglotOptionsError(BenchmarkError, ValueError):
    """An option is wrong; `field` names it (e.g. "languages.1")."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"polyglot option {field!r}: {message}")
        self.field = field


class PolyglotOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # A folder in the Aider polyglot layout: <root>/<language>/exercises/practice/<exercise>/.
    root: Path = FIXTURES_DIR
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
    def _root_is_a_folder(cls, value: Path) -> Path:
        if not value.is_dir():
            raise ValueError(f"{value} is not a folder")
        return value.resolve()

    @field_validator("languages", "exercises")
    @classmethod
    def _no_duplicates(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and len(set(value)) != len(value):
            raise ValueError("lists a name twice")
        return value


def parse_options(options: dict[str, Any]) -> PolyglotOptions:
    """Validate `options`; a `PolyglotOptionsError` names the first wrong field."""
    try:
        return PolyglotOptions.model_validate(options)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"]) or "options"
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            known = ", ".join(PolyglotOptions.model_fields)
            message = f"unknown option (known: {known})"
        raise PolyglotOptionsError(field, message) from exc
