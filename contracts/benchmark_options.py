"""`benchmark` of a run configuration: a registered benchmark's name and its options.

This layer knows no benchmark: `options` is the JSON object the request gave, and each
benchmark validates it with its own options model (benchmarks/registry.py), the service
when it plans a run (a 422 naming the option), the worker when it loads the benchmark,
the CLI before it sends anything. What this layer fixes is the shape of that refusal,
`BenchmarkOptionError`, so that every layer above can report it.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple, get_args

from pydantic import BaseModel, ConfigDict, Field

# Polyglot's languages are also a worker's vocabulary (which toolchains an image has).
LanguageName = Literal["python", "javascript", "go", "rust", "java", "cpp"]
LANGUAGES: tuple[LanguageName, ...] = get_args(LanguageName)

DEFAULT_BENCHMARK = "clade-mini"


class Options(BaseModel):
    """The base of a benchmark's options model: unknown options are refused, values frozen,
    and NaN or infinity refused (a stored configuration must go back out as JSON)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class BenchmarkConfig(BaseModel):
    """A benchmark by its registered name, with its options (validated by that benchmark)."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_serialization_defaults_required=True)

    name: str = Field(
        default=DEFAULT_BENCHMARK,
        min_length=1,
        max_length=200,
        description="a registered benchmark: clade-mini, swebench, swebench-pro, polyglot, folder, harbor, "
        "or an installed plugin's (`clade bench list`)",
    )
    options: dict[str, Any] = Field(
        default_factory=dict, description="the benchmark's own options (docs/extend/benchmark.md)"
    )


class BenchmarkChoice(BaseModel):
    """A benchmark and its options on their own (as a request body), as in a run configuration."""

    model_config = ConfigDict(extra="forbid")

    benchmark: BenchmarkConfig


class OptionProblem(NamedTuple):
    """One wrong part of a `benchmark`: `loc` within it (`("options", "languages", 0)`, or
    `("name",)`), the message, and the kind (pydantic's error type where pydantic found it)."""

    loc: tuple[str | int, ...]
    message: str
    kind: str

    @property
    def path(self) -> str:
        """The path within the options (`languages.0`), `options` for the whole, or `name`."""
        if self.loc[:1] == ("options",):
            return ".".join(str(part) for part in self.loc[1:]) or "options"
        return ".".join(str(part) for part in self.loc)


class BenchmarkOptionError(ValueError):
    """A `benchmark` is wrong: an unknown or unloadable name, or options its model refuses.
    Unknown options come first; `field` is the first problem's path."""

    def __init__(self, problems: list[OptionProblem]) -> None:
        super().__init__("; ".join(f"{problem.path}: {problem.message}" for problem in problems))
        self.problems = problems
        self.field = problems[0].path


__all__ = [
    "DEFAULT_BENCHMARK",
    "LANGUAGES",
    "BenchmarkChoice",
    "BenchmarkConfig",
    "BenchmarkOptionError",
    "LanguageName",
    "OptionProblem",
    "Options",
]
