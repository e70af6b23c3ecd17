"""A benchmark's registration record, and the one translation of its options' errors.

Every benchmark, Clade's own and a plugin's, is one `BenchmarkSpec`: its name, its options
model and a factory that builds it from validated options. The registry
(benchmarks/registry.py) finds specs; nothing else names a benchmark's classes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from benchmarks.base import Benchmark
from contracts.benchmark_options import BenchmarkOptionError, OptionProblem, Options

OptionsT = TypeVar("OptionsT", bound=BaseModel)


@dataclass(frozen=True)
class LoadContext:
    """How the caller loads: `offline` (the service) keeps a load from the network, e.g. a
    dataset named rather than given as a file is read from the local cache only."""

    offline: bool = False


@dataclass(frozen=True)
class BenchmarkSpec(Generic[OptionsT]):
    """One registered benchmark. `options` validates `benchmark.options` of a run
    configuration (subclass `Options`: unknown keys refused); `factory` builds the benchmark
    from them. A factory may raise `OptionError` naming an option only loading can check
    (an instance the dataset lacks); the API answers 422 at that option."""

    name: str
    options: type[OptionsT]
    factory: Callable[[OptionsT, LoadContext], Benchmark]
    description: str = ""

    def parse(self, raw: Mapping[str, Any]) -> OptionsT:
        """The options, typed; raises BenchmarkOptionError naming every wrong one."""
        return validate_options(self.name, self.options, raw)

    def build(self, options: OptionsT, context: LoadContext | None = None) -> Benchmark:
        return self.factory(options, context or LoadContext())


def validate_options(name: str, model: type[OptionsT], raw: Mapping[str, Any]) -> OptionsT:
    """`raw` validated by `model`, or BenchmarkOptionError at `options.<field>` (unknown
    options first, listing the known ones)."""
    try:
        return model.model_validate(dict(raw))
    except ValidationError as exc:
        raise option_error(name, model, exc) from exc


def option_error(name: str, model: type[BaseModel], exc: ValidationError) -> BenchmarkOptionError:
    """pydantic's errors on `model` as the problems of `benchmark.options`."""
    problems: list[OptionProblem] = []
    for error in sorted(exc.errors(), key=lambda error: error["type"] != "extra_forbidden"):
        loc = tuple(error["loc"])
        message = str(error["msg"])
        if error["type"] == "extra_forbidden" and len(loc) == 1:
            message = f"unknown option of {name} (known: {', '.join(model.model_fields) or 'none'})"
        problems.append(OptionProblem(("options", *loc), message, str(error["type"])))
    return BenchmarkOptionError(problems)


__all__ = ["BenchmarkSpec", "LoadContext", "Options", "option_error", "validate_options"]
