"""Benchmarks by name. Implementations are imported only when asked for."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from benchmarks.base import Benchmark, UnknownBenchmark
from contracts.benchmark_options import (
    AnyBenchmarkConfig,
    CladeMiniConfig,
    FolderConfig,
    PolyglotConfig,
    SWEbenchConfig,
)

BenchmarkFactory = Callable[..., Benchmark]

# name -> "module:attribute" of a factory (a class or a function) taking keyword options.
_BUILTIN: dict[str, str] = {
    "clade-mini": "benchmarks.clade_mini:CladeMini",
    "swebench": "benchmarks.swebench:from_options",
    "polyglot": "benchmarks.polyglot:Polyglot",
    "folder": "benchmarks.folder:FolderBenchmark",
}
_registered: dict[str, BenchmarkFactory] = {}


def register_benchmark(name: str, factory: BenchmarkFactory) -> None:
    """Add (or replace) a benchmark, e.g. from a plugin or a test."""
    _registered[name] = factory


def known_benchmarks() -> list[str]:
    return sorted({*_BUILTIN, *_registered})


def get_benchmark(name: str, **options: Any) -> Benchmark:
    """Build the benchmark registered as `name`, passing `options` to its factory."""
    factory = _registered.get(name)
    if factory is None:
        if name not in _BUILTIN:
            known = ", ".join(known_benchmarks())
            raise UnknownBenchmark(f"unknown benchmark {name!r}; known benchmarks: {known}")
        module_name, _, attribute = _BUILTIN[name].partition(":")
        factory = getattr(importlib.import_module(module_name), attribute)
    return factory(**options)


def build_benchmark(config: AnyBenchmarkConfig, *, offline: bool = False) -> Benchmark:
    """The benchmark of a run configuration, its options already validated (typed).
    `offline`: a dataset named rather than given as a file is read from the local cache only."""
    factory = _registered.get(config.name)
    if factory is not None:  # a replacement registered under a built-in name
        return factory(**config.options.model_dump(exclude_unset=True))
    match config:
        case CladeMiniConfig():
            from benchmarks.clade_mini import CladeMini

            return CladeMini()
        case SWEbenchConfig():
            from benchmarks.swebench import SWEbench

            return SWEbench(config.options, offline=offline)
        case PolyglotConfig():
            from benchmarks.polyglot import Polyglot

            return Polyglot(config.options)
        case FolderConfig():
            from benchmarks.folder import FolderBenchmark

            return FolderBenchmark(path=config.options.path)
