"""The swebench-pro benchmark's options (`benchmark.options` of a run configuration)."""

from __future__ import annotations

from typing import Self

from pydantic import Field, model_validator

from contracts.benchmark_options import Options

__all__ = ["IMAGE_REPOSITORY", "SWEbenchProOptions"]

# Where SWE-bench Pro publishes its instance images (`<repository>:<dockerhub_tag>`).
IMAGE_REPOSITORY = "jefzda/sweap-images"


class SWEbenchProOptions(Options):
    """Which rows to load, where their run scripts and parsers are, and how to grade them."""

    dataset: str = Field(
        min_length=1,
        description="a .json/.jsonl/.parquet file of SWE-bench Pro rows, a folder holding "
        "<split>.parquet|.jsonl|.json, or a dataset name (ScaleAI/SWE-bench_Pro, or pro)",
    )
    scripts: str = Field(
        min_length=1,
        description="the folder of per-instance scripts in the published layout: "
        "<scripts>/<instance_id>/run_script.sh and parser.py (SWE-bench Pro's run_scripts/)",
    )
    split: str = Field(default="test", min_length=1)
    instance_ids: list[str] | None = Field(
        default=None, min_length=1, description="keep only these instances, in this order"
    )
    subset: str | None = Field(
        default=None,
        description="keep only this named subset (one of `subsets`, repo:<owner/name> or language:<lang>)",
    )
    subsets: dict[str, list[str]] = Field(
        default_factory=dict, description="named lists of instance ids, e.g. for a run's stages"
    )
    image_repository: str = Field(
        default=IMAGE_REPOSITORY,
        min_length=1,
        description="the image of a row is <image_repository>:<dockerhub_tag>; an image the engine "
        "lacks is pulled by that name, one it has (pulled, built or loaded) is used as it is",
    )
    dataset_timeout_s: float = Field(default=60.0, gt=0, le=3600)
    parser_timeout_s: float = Field(
        default=120.0, gt=0, le=3600, description="how long an instance's parser may take"
    )
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
