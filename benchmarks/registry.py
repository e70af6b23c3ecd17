"""Benchmarks by registered name: Clade's own and installed plugins, found the same way.

A benchmark is registered as an entry point `name = module:attribute` whose attribute is a
`BenchmarkSpec` (benchmarks/spec.py). Clade's own are listed here (a checkout run without
installing still has them); a plugin package declares its own in the `clade.benchmarks`
entry-point group of its metadata. A name is only ever looked up in this table: nothing a
request gives is imported. A spec is imported when its benchmark is first asked for, so a
plugin that fails to import fails only where it is named, with an error naming its entry
point, and two registrations of one name are refused wherever that name is used.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from pydantic import BaseModel

from benchmarks.base import Benchmark, BenchmarkError, UnknownBenchmark
from benchmarks.spec import BenchmarkSpec, LoadContext
from contracts.benchmark_options import BenchmarkConfig, BenchmarkOptionError, OptionProblem

ENTRY_POINT_GROUP = "clade.benchmarks"

# Clade's own, as entry points (the order `benchmark.name`'s refusal lists them in).
BUILTIN: dict[str, str] = {
    "clade-mini": "benchmarks.clade_mini.registration:BENCHMARK",
    "swebench": "benchmarks.swebench.registration:BENCHMARK",
    "swebench-pro": "benchmarks.swebench_pro.registration:BENCHMARK",
    "polyglot": "benchmarks.polyglot.registration:BENCHMARK",
    "folder": "benchmarks.folder.registration:BENCHMARK",
    "harbor": "benchmarks.harbor.registration:BENCHMARK",
}


class PluginError(BenchmarkError):
    """A registered benchmark cannot be used: its entry point fails to load or gives no spec."""


class DuplicateBenchmark(BenchmarkError):
    """Two registrations claim one name."""


@dataclass(frozen=True)
class Registration:
    """Where a name is registered: `origin` says by whom (for errors), `load` gives the spec."""

    name: str
    origin: str
    load: Callable[[], object]

    own: bool = False  # Clade's own: its factories' errors are Clade's to type

    @classmethod
    def of_entry_point(cls, entry: EntryPoint, *, by: str | None = None) -> Registration:
        if by is None:
            dist = entry.dist
            by = f"distribution {dist.name} {dist.version}" if dist is not None else "an unknown distribution"
        return cls(entry.name, f"entry point {entry.name!r} = {entry.value} ({by})", entry.load)

    @classmethod
    def of_spec(cls, spec: BenchmarkSpec[Any], origin: str = "registered from Python") -> Registration:
        return cls(spec.name, f"{spec.name!r} ({origin})", lambda: spec)


@dataclass(frozen=True)
class Resolved:
    """A benchmark configuration checked against its spec: the spec and the typed options."""

    spec: BenchmarkSpec[Any]
    options: BaseModel

    @property
    def key(self) -> str:
        """The same for the same benchmark and options however they were written."""
        return f"{self.spec.name}:{self.options.model_dump_json()}"

    def config(self) -> BenchmarkConfig:
        """The configuration with every option spelled out (as a run stores it)."""
        return BenchmarkConfig(name=self.spec.name, options=self.options.model_dump(mode="json"))


class BenchmarkRegistry:
    """Registrations by name; specs loaded once each, on first use; thread-safe."""

    def __init__(self, registrations: Iterable[Registration]) -> None:
        self._claims: dict[str, list[Registration]] = {}
        for registration in registrations:
            self._claims.setdefault(registration.name, []).append(registration)
        self._specs: dict[str, BenchmarkSpec[Any]] = {}
        self._lock = threading.Lock()

    @classmethod
    def installed(cls) -> BenchmarkRegistry:
        """Clade's own benchmarks and every installed plugin's (read from package metadata now)."""
        own = [
            replace(
                Registration.of_entry_point(EntryPoint(name, value, ENTRY_POINT_GROUP), by="Clade"), own=True
            )
            for name, value in BUILTIN.items()
        ]
        plugins = {(entry.name, entry.value, entry.dist and entry.dist.name): entry for entry in _plugins()}
        return cls([*own, *(Registration.of_entry_point(entry) for entry in plugins.values())])

    def with_specs(self, *specs: BenchmarkSpec[Any]) -> BenchmarkRegistry:
        """This registry with `specs` added, each replacing a registration of its name."""
        replaced = {spec.name for spec in specs}
        kept = [r for claims in self._claims.values() for r in claims if r.name not in replaced]
        return BenchmarkRegistry([*kept, *(Registration.of_spec(spec) for spec in specs)])

    def names(self) -> list[str]:
        """Every registered name: Clade's own first, then the plugins' in order."""
        own = [name for name in BUILTIN if name in self._claims]
        return own + sorted(name for name in self._claims if name not in BUILTIN)

    def spec(self, name: str) -> BenchmarkSpec[Any]:
        """The spec registered as `name`; UnknownBenchmark, DuplicateBenchmark or PluginError."""
        with self._lock:
            found = self._specs.get(name)
        if found is not None:
            return found
        claims = self._claims.get(name)
        if not claims:
            raise UnknownBenchmark(f"unknown benchmark {name!r}; known: {', '.join(self.names())}")
        if len(claims) > 1:
            by = " and ".join(claim.origin for claim in claims)
            raise DuplicateBenchmark(
                f"benchmark {name!r} is registered {len(claims)} times, by {by}: uninstall all but one"
            )
        spec = _load(claims[0])
        with self._lock:
            return self._specs.setdefault(name, spec)

    def resolve(self, config: BenchmarkConfig) -> Resolved:
        """The spec and typed options of `config`; BenchmarkOptionError names what is wrong
        (`name` for a benchmark that is unknown or cannot load, else each wrong option)."""
        try:
            spec = self.spec(config.name)
        except UnknownBenchmark as exc:
            # pydantic's kind for a tag no union member has, as a typed union answered before.
            raise BenchmarkOptionError([OptionProblem(("name",), str(exc), "union_tag_invalid")]) from exc
        except BenchmarkError as exc:
            raise BenchmarkOptionError([OptionProblem(("name",), str(exc), "benchmark_unavailable")]) from exc
        return Resolved(spec, spec.parse(config.options))

    def build(self, config: BenchmarkConfig, context: LoadContext | None = None) -> Benchmark:
        resolved = self.resolve(config)
        return resolved.spec.build(resolved.options, context)


def _plugins() -> list[EntryPoint]:
    return list(entry_points(group=ENTRY_POINT_GROUP))


def _load(registration: Registration) -> BenchmarkSpec[Any]:
    """Import a registration's spec; whatever goes wrong is a PluginError naming it."""
    try:
        loaded = registration.load()
    except Exception as exc:  # a plugin's import may raise anything: reported, not swallowed
        raise PluginError(
            f"benchmark {registration.name!r} cannot load: {registration.origin} failed: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    problem = _not_a_spec(registration.name, loaded)
    if problem:
        raise PluginError(f"benchmark {registration.name!r} cannot load: {registration.origin} {problem}")
    assert isinstance(loaded, BenchmarkSpec)
    if registration.own:
        return loaded
    return replace(loaded, factory=_guarded(loaded.factory, registration))


def _guarded(factory: Callable[[Any, LoadContext], Benchmark], registration: Registration) -> Any:
    """A plugin's factory whose unexpected errors are a PluginError naming its entry point (a
    422 at `benchmark.options`, not a 500); BenchmarkError and OSError pass as they are."""

    def build(options: Any, context: LoadContext) -> Benchmark:
        try:
            return factory(options, context)
        except (BenchmarkError, OSError):
            raise
        except Exception as exc:  # a plugin may raise anything: reported, not swallowed
            raise PluginError(
                f"{registration.origin} failed to build the benchmark: {type(exc).__name__}: {exc}"
            ) from exc

    return build


def _not_a_spec(name: str, loaded: object) -> str:
    if not isinstance(loaded, BenchmarkSpec):
        return f"gives a {type(loaded).__name__}, not a benchmarks.spec.BenchmarkSpec"
    if loaded.name != name:
        return f"gives the spec of {loaded.name!r}: an entry point's name must be its benchmark's"
    if not (isinstance(loaded.options, type) and issubclass(loaded.options, BaseModel)):
        return "gives a spec whose options are not a pydantic model"
    if not callable(loaded.factory):
        return "gives a spec whose factory cannot be called"
    return ""


@cache
def installed_registry() -> BenchmarkRegistry:
    """The registry of this process (plugins are read once: installing one needs a restart)."""
    return BenchmarkRegistry.installed()


def known_benchmarks() -> list[str]:
    return sorted(installed_registry().names())


def benchmark_config(name: str, options: Mapping[str, Any] | None = None) -> BenchmarkConfig:
    """The configuration of `name` with `options` checked and spelled out in full;
    raises BenchmarkOptionError naming every wrong option (or `name`)."""
    return installed_registry().resolve(BenchmarkConfig(name=name, options=dict(options or {}))).config()


def get_benchmark(name: str, **options: Any) -> Benchmark:
    """Build the benchmark registered as `name` from plain options (Python's door)."""
    spec = installed_registry().spec(name)
    return spec.build(spec.parse(options))


def build_benchmark(config: BenchmarkConfig, *, offline: bool = False) -> Benchmark:
    """The benchmark of a run configuration. `offline`: a dataset named rather than given as
    a file is read from the local cache only."""
    return installed_registry().build(config, LoadContext(offline=offline))
