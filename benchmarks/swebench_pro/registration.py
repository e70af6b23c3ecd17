"""swebench-pro's registration record (benchmarks/registry.py lists it as Clade's own)."""

from __future__ import annotations

from benchmarks.spec import BenchmarkSpec, LoadContext
from benchmarks.swebench_pro.benchmark import SWEbenchPro
from benchmarks.swebench_pro.options import SWEbenchProOptions


def _build(options: SWEbenchProOptions, context: LoadContext) -> SWEbenchPro:
    return SWEbenchPro(options, offline=context.offline)


BENCHMARK = BenchmarkSpec(
    name="swebench-pro",
    options=SWEbenchProOptions,
    factory=_build,
    description="SWE-bench Pro rows, graded by each instance's own run script and parser",
)
