"""Predictions in swebench's JSONL format, for the official harness or sb-cli to score again.

One JSON object per line with exactly the keys `instance_id`, `model_name_or_path` and
`model_patch` (what `swebench.harness.run_evaluation --predictions_path x.jsonl` reads).
Export the patch Clade graded (`graded_patch(...).patch`) to get the same verdicts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field


class Prediction(BaseModel):
    """One line of a predictions file; the format is swebench's, so it carries no version."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    instance_id: str = Field(min_length=1)
    model_name_or_path: str = Field(min_length=1)
    model_patch: str


def predictions_jsonl(rows: Iterable[tuple[str, str, str]]) -> str:
    """`(instance_id, model_name_or_path, model_patch)` rows as predictions JSONL.

    Raises ValueError for an empty id or model name, or an instance id given twice (the
    harness keys predictions by instance id, so one of the two would be lost).
    """
    lines: list[str] = []
    seen: set[str] = set()
    for instance_id, model, patch in rows:
        prediction = Prediction(instance_id=instance_id, model_name_or_path=model, model_patch=patch)
        if instance_id in seen:
            raise ValueError(f"instance {instance_id!r} has two predictions")
        seen.add(instance_id)
        # ASCII-only (escaped), so the file reads the same whatever the reader's locale.
        lines.append(json.dumps(prediction.model_dump()) + "\n")
    return "".join(lines)
