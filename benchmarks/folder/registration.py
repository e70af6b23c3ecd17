"""folder's registration record (benchmarks/registry.py lists it as Clade's own)."""

from __future__ import annotations

from benchmarks.folder import FolderBenchmark
from benchmarks.folder.options import FolderOptions
from benchmarks.spec import BenchmarkSpec, LoadContext


def _build(options: FolderOptions, _context: LoadContext) -> FolderBenchmark:
    return FolderBenchmark(path=options.path)


BENCHMARK = BenchmarkSpec(
    name="folder",
    options=FolderOptions,
    factory=_build,
    description="a benchmark folder of your own, in the clade-mini layout (docs/own-benchmark.md)",
)
