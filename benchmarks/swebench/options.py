"""The swebench benchmark's options (`benchmark.options` of a run configuration).

The model lives with the other benchmarks' options in contracts/benchmark_options.py,
so that a run configuration, a job and the CLI validate them alike.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from benchmarks.base import OptionError
from contracts.benchmark_options import SWEbenchOptions

__all__ = ["InvalidOptions", "SWEbenchOptions", "parse_options"]


class InvalidOptions(OptionError):
    """The options are wrong; the message names each field."""


def parse_options(options: dict[str, Any]) -> SWEbenchOptions:
    """Validate `options` given as keywords; raise InvalidOptions naming every wrong field."""
    try:
        return SWEbenchOptions.model_validate(options)
    except ValidationError as exc:
        fields = [".".join(str(part) for part in error["loc"]) or "options" for error in exc.errors()]
        problems = "; ".join(
            f"{field}: {error['msg']}" for field, error in zip(fields, exc.errors(), strict=True)
        )
        raise InvalidOptions(fields[0], f"swebench options: {problems}") from exc
