"""The folder benchmark's options, as a run configuration gives them (`benchmark.options`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from benchmarks.base import BenchmarkError


class FolderOptionsError(BenchmarkError, ValueError):
    """An option is wrong; `field` names it (e.g. "path")."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"folder option {field!r}: {message}")
        self.field = field


class FolderOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # The benchmark's folder (see docs/own-benchmark.md): tasks/<id>/task.json, repos/<repo>/...
    path: Path

    @field_validator("path")
    @classmethod
    def _path_is_a_folder(cls, value: Path) -> Path:
        value = value.expanduser()
        if not value.is_dir():
            raise ValueError(f"{value} is not a folder")
        return value.resolve()


def parse_options(options: dict[str, Any]) -> FolderOptions:
    """Validate `options`; a `FolderOptionsError` names the first wrong field."""
    try:
        return FolderOptions.model_validate(options)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"]) or "options"
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = f"unknown option (known: {', '.join(FolderOptions.model_fields)})"
        elif error["type"] == "missing":
            message = "required: the benchmark's folder (benchmark: {name: folder, options: {path: ...}})"
        raise FolderOptionsError(field, message) from exc
