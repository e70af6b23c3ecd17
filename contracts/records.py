"""Versioned records that outlive a process: evaluation results, usage, exports.

Workers send these to the service; exports carry them to users. Each has a
`schema_version` so that a reader can tell what it holds.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class UsageRecord(Record):
    """One metered LLM call, as the gateway (never the agent) measured it."""

    schema_version: Literal[1] = 1
    purpose: str = Field(max_length=32)
    model: str = Field(max_length=200)
    prompt_tokens: int = Field(ge=0)
    completion_tokens: int = Field(ge=0)
    cost_usd: float = Field(ge=0)
    detail: dict[str, Any] = Field(default_factory=dict)


class Durations(Record):
    setup_s: float = 0.0
    agent_s: float = 0.0
    grade_s: float = 0.0
    total_s: float = 0.0


class EvaluationResult(Record):
    """The outcome of one (agent, task) pair."""

    schema_version: Literal[1] = 1
    resolved: bool
    patch_applied: bool = True
    grade_reason: str = ""
    tests: dict[str, str] = Field(default_factory=dict)
    fail_to_pass: dict[str, str] = Field(default_factory=dict)
    pass_to_pass: dict[str, str] = Field(default_factory=dict)
    diff: str = ""
    trajectory: Any = None
    agent_log: str = ""
    test_log: str = ""
    agent_exit_code: int | None = None
    timed_out: bool = False
    failure: str | None = None  # why the agent's run failed (its own fault, not infrastructure)
    # Why the evaluation could not run at all (no image, no engine...): not the agent's doing.
    infrastructure_failure: str | None = None
    durations: Durations = Field(default_factory=Durations)
    # Paths of the agent's diff that grading left out as test infrastructure -> the rule.
    dropped_for_grading: dict[str, str] = Field(default_factory=dict)
    # Evidence that the test results were forged (then `resolved` is False); None when not.
    tampered: str | None = None

    @model_validator(mode="after")
    def _tampered_is_never_resolved(self) -> EvaluationResult:
        if self.tampered is not None and self.resolved:
            raise ValueError("a tampered evaluation cannot be resolved")
        return self


class EvaluationSubmission(Record):
    result: EvaluationResult
    usage: list[UsageRecord] = Field(default_factory=list)


class StageScoreRecord(Record):
    stage: int
    resolved: int
    total: int
    threshold: float
    passed: bool


class AgentRunRecord(Record):
    run_id: str
    run_name: str
    status: str
    reason: str | None
    score: float | None
    stages: list[StageScoreRecord]
    config: dict[str, Any]


class AgentMetadata(Record):
    """`metadata.json` inside an exported agent."""

    schema_version: Literal[1] = 1
    agent_id: str
    parent_id: str | None
    lineage: list[str]  # seed first, this agent last
    kind: str
    name: str | None
    manifest: dict[str, Any]
    created_at: datetime
    exported_at: datetime
    runs: list[AgentRunRecord]


class ChildSubmission(BaseModel):
    """A step's outcome: the child's patch, with the step's own LLM usage (diagnosis, improver)."""

    patch: str
    diagnosis: str | None = None
    # Set when the child failed validation (does not start, its own tests fail): it is archived
    # and shown, but never becomes a parent.
    rejection: str | None = Field(default=None, max_length=20_000)
    usage: list[UsageRecord] = Field(default_factory=list)


class StepFailure(BaseModel):
    reason: str = Field(min_length=1, max_length=20_000)
    diagnosis: str | None = None
    usage: list[UsageRecord] = Field(default_factory=list)
