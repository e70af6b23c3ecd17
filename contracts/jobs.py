"""The messages the run driver sends to workers through Celery (JSON, versioned)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from contracts.config import LimitsConfig

IMPROVE_TASK = "clade.improve"
EVALUATE_TASK = "clade.evaluate"


class Job(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    run_id: str
    limits: LimitsConfig
    # What the run may still spend when the job is sent; the gateway refuses calls beyond it.
    run_remaining_usd: float | None = None
    run_remaining_tokens: int | None = None
    per_evaluation_usd: float | None = None
    per_evaluation_tokens: int | None = None


class BenchmarkRef(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    options: dict[str, Any] = Field(default_factory=dict)


class ImproveJob(Job):
    """Make one child: diagnose `parent_id`, let the improver edit a copy of its code."""

    step_id: str
    parent_id: str
    improver_id: str  # the parent itself in mode `self`, the fixed agent in mode `fixed`
    diagnose_model: str
    improve_model: str
    benchmark: BenchmarkRef


class EvaluateJob(Job):
    """Run one agent on one task and grade it."""

    evaluation_id: str
    agent_id: str
    task_id: str
    solve_model: str
    benchmark: BenchmarkRef
