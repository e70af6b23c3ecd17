"""The swebench benchmark's options (`benchmark.options` of a run configuration)."""

from __future__ import annotations

from typing import Self

from pydantic import Field, model_validator

from contracts.benchmark_options import Options

__all__ = ["SWEBENCH_NAMESPACE", "SWEbenchOptions"]

# The namespace the SWE-bench harness pulls its published images from.
SWEBENCH_NAMESPACE = "swebench"


class SWEbenchOptions(Options):
    """Which instances to load and how to grade them."""

    dataset: str = Field(
        min_length=1,
        description="a .json/.jsonl/.parquet file, a folder holding <split>.parquet|.jsonl|.json, "
        "or a dataset name (SWE-bench/SWE-bench_Lite, or lite, verified, full, ...)",
    )
    split: str = Field(default="test", min_length=1)
    instance_ids: list[str] | None = Field(
        default=None, min_length=1, description="keep only these instances, in this order"
    )
    subset: str | None = Field(
        default=None, description="keep only this named subset (one of `subsets`, or repo:<owner/name>)"
    )
    subsets: dict[str, list[str]] = Field(
        default_factory=dict, description="named lists of instance ids, e.g. for a run's stages"
    )
    namespace: str | None = Field(
        default=SWEBENCH_NAMESPACE,
        description="swebench 4.x only: the registry namespace in derived image names "
        "(<namespace>/sweb.eval.<arch>.<id>:latest, as the harness names them; null: the harness's "
        "local build names). An image the engine lacks is pulled; one it has, pulled, built or "
        "loaded under that name, is used as it is",
    )
    dataset_timeout_s: float = Field(default=60.0, gt=0, le=3600)
    memory_mb: int = Field(default=4096, ge=256, description="memory of the grading sandbox")
    cpus: float = Field(default=1.0, gt=0, description="CPUs of the grading sandbox")
    pids: int = Field(default=1024, ge=64, description="process limit of the grading sandbox")

    @model_validator(mode="after")
    def _one_selection(self) -> Self:
        if self.instance_ids is not None and self.subset is not None:
            raise ValueError("give either 'instance_ids' or 'subset', not both")
        if "all" in self.subsets:
            raise ValueError("subsets: 'all' is built in (every selected instance)")
        return self
