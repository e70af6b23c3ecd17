"""polyglot's registration record (benchmarks/registry.py lists it as Clade's own)."""

from __future__ import annotations

from benchmarks.polyglot import Polyglot
from benchmarks.polyglot.options import PolyglotOptions
from benchmarks.spec import BenchmarkSpec, LoadContext


def _build(options: PolyglotOptions, _context: LoadContext) -> Polyglot:
    return Polyglot(options)


BENCHMARK = BenchmarkSpec(
    name="polyglot",
    options=PolyglotOptions,
    factory=_build,
    description="exercises in the Aider polyglot layout (Python fixtures ship with Clade)",
)
