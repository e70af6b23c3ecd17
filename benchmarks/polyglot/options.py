"""The polyglot benchmark's options, as a run configuration gives them (`benchmark.options`).

The model lives with the other benchmarks' options in contracts/benchmark_options.py,
so that a run configuration, a job and the CLI validate them alike.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from benchmarks.base import OptionError
from contracts.benchmark_options import PolyglotOptions

__all__ = ["PolyglotOptions", "PolyglotOptionsError", "parse_options"]


class PolyglotOptionsError(OptionError):
    """An option is wrong; `field` names it (e.g. "languages.1")."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(field, f"polyglot option {field!r}: {message}")


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
