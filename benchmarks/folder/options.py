"""The folder benchmark's options, as a run configuration gives them (`benchmark.options`)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from benchmarks.base import OptionError
from contracts.benchmark_options import FolderOptions

__all__ = ["FolderOptions", "FolderOptionsError", "parse_options"]


class FolderOptionsError(OptionError):
    """An option is wrong; `field` names it (e.g. "path")."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(field, f"folder option {field!r}: {message}")


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
