"""swebench's registration record (benchmarks/registry.py lists it as Clade's own)."""

from __future__ import annotations

from benchmarks.spec import BenchmarkSpec, LoadContext
from benchmarks.swebench.benchmark import SWEbench
from benchmarks.swebench.options import SWEbenchOptions


def _build(options: SWEbenchOptions, context: LoadContext) -> SWEbench:
    return SWEbench(options, offline=context.offline)


BENCHMARK = BenchmarkSpec(
    name="swebench",
    options=SWEbenchOptions,
    factory=_build,
    description="SWE-bench instances from a file or a dataset, graded by the swebench package",
)
