"""harbor's registration record (benchmarks/registry.py lists it as Clade's own)."""

from __future__ import annotations

from benchmarks.harbor import HarborBenchmark
from benchmarks.harbor.options import HarborOptions
from benchmarks.spec import BenchmarkSpec, LoadContext


def _build(options: HarborOptions, _context: LoadContext) -> HarborBenchmark:
    return HarborBenchmark(options)


BENCHMARK = BenchmarkSpec(
    name="harbor",
    options=HarborOptions,
    factory=_build,
    description="Harbor task folders: Terminal-Bench 2.x and Harbor's adapters (docs/harbor.md)",
)
