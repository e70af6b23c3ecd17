"""Predictions in the format SWE-bench Pro's evaluator reads (`swe_bench_pro_eval.py
--patch_path`): one JSON list of {"instance_id", "patch", "prefix"} objects, `prefix` naming
the model or run (the evaluator names its output files by it)."""

from __future__ import annotations

import json
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field


class ProPrediction(BaseModel):
    """One entry of a patches file; the format is SWE-bench Pro's, so it carries no version."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    instance_id: str = Field(min_length=1)
    patch: str
    prefix: str = Field(min_length=1)


def pro_predictions_json(rows: Iterable[tuple[str, str, str]]) -> str:
    """`(instance_id, prefix, patch)` rows as a patches file. Raises ValueError for an empty id
    or prefix, or an instance given twice (the evaluator would grade it twice over one output)."""
    entries: list[dict[str, str]] = []
    seen: set[str] = set()
    for instance_id, prefix, patch in rows:
        entry = ProPrediction(instance_id=instance_id, patch=patch, prefix=prefix)
        if instance_id in seen:
            raise ValueError(f"instance {instance_id!r} has two predictions")
        seen.add(instance_id)
        entries.append(entry.model_dump())
    return json.dumps(entries, indent=1) + "\n"
