"""clade-mini's registration record (benchmarks/registry.py lists it as Clade's own)."""

from __future__ import annotations

from benchmarks.clade_mini import CladeMini
from benchmarks.spec import BenchmarkSpec, LoadContext
from contracts.benchmark_options import Options


class CladeMiniOptions(Options):
    """clade-mini has no options: its tasks ship with Clade."""


def _build(_options: CladeMiniOptions, _context: LoadContext) -> CladeMini:
    return CladeMini()


BENCHMARK = BenchmarkSpec(
    name="clade-mini",
    options=CladeMiniOptions,
    factory=_build,
    description="a small offline suite written for Clade, in SWE-bench instance format",
)
