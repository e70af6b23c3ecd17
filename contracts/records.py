"""Versioned records that outlive a process: evaluation results, usage, exports.

Workers send these to the service; exports carry them to users. Each has a
`schema_version` so that a reader can tell what it holds.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from contracts.scores import ScoreCounts

# Token counts are stored in 32-bit integer columns and summed there, per call (prompt plus
# completion) and per evaluation: a call reports at most a billion of each, far beyond any
# model's context, and an evaluation's totals must still fit.
MAX_CALL_TOKENS = 1_000_000_000
MAX_TOTAL_TOKENS = 2**31 - 1
# Costs are summed per evaluation and per run: bounded per call so that no sum reaches infinity,
# which JSON cannot carry. A billion tokens of each kind at the highest price a table may hold
# (contracts.prices.MAX_PRICE_PER_MILLION) stays under it.
MAX_CALL_USD = 100_000_000.0
# An evaluation's measured phases: far past any time limit a run allows (a day per phase), and
# small enough that summing them over any number of evaluations stays finite.
MAX_DURATION_S = 30 * 24 * 3600.0


class Record(BaseModel):
    # NaN and infinity have no JSON form: refused on the way in, so no answer fails on the way out.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class UsageRecord(Record):
    """One metered LLM call, as the gateway (never the agent) measured it."""

    schema_version: Literal[1] = 1
    purpose: str = Field(max_length=32)
    model: str = Field(max_length=200)
    prompt_tokens: int = Field(ge=0, le=MAX_CALL_TOKENS)
    completion_tokens: int = Field(ge=0, le=MAX_CALL_TOKENS)
    cost_usd: float = Field(ge=0, le=MAX_CALL_USD)
    detail: dict[str, Any] = Field(default_factory=dict)


class Durations(Record):
    """Seconds an evaluation spent in each phase, as its worker measured them."""

    setup_s: float = Field(default=0.0, ge=0, le=MAX_DURATION_S)
    agent_s: float = Field(default=0.0, ge=0, le=MAX_DURATION_S)
    grade_s: float = Field(default=0.0, ge=0, le=MAX_DURATION_S)
    total_s: float = Field(default=0.0, ge=0, le=MAX_DURATION_S)


class JudgeVerdict(Record):
    """What the judge model made of an evaluation's trajectory (see contracts.config.JudgeConfig)."""

    model: str = Field(max_length=200)
    score: float | None = Field(ge=0.0, le=1.0)  # None: the judge gave no readable score
    reason: str = Field(max_length=4_000)
    threshold: float = Field(ge=0.0, le=1.0)
    mode: Literal["tests_and_judge", "judge_only"]
    passed: bool  # score >= threshold
    tests_resolved: bool  # the test-based verdict the judge's was combined with


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
    # Set with it when the cause was the model upstream: every model call of the evaluation failed there.
    upstream_failed: bool = False
    durations: Durations = Field(default_factory=Durations)
    # Paths of the agent's diff that grading left out as test infrastructure -> the rule.
    dropped_for_grading: dict[str, str] = Field(default_factory=dict)
    # Non-test paths of the diff that reach into the test runner -> what; flagged, not a verdict.
    runner_tampering: dict[str, str] = Field(default_factory=dict)
    # Evidence that the test results were forged (then `resolved` is False); None when not.
    tampered: str | None = None
    # Set when the evaluation's utility has a judge and it was asked; `resolved` combines both.
    judge: JudgeVerdict | None = None
    # What the run's calls showed that no verdict says (e.g. "the model never used a tool").
    warnings: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _tampered_is_never_resolved(self) -> EvaluationResult:
        if self.tampered is not None and self.resolved:
            raise ValueError("a tampered evaluation cannot be resolved")
        return self


def _totals_fit(usage: list[UsageRecord]) -> list[UsageRecord]:
    for field in ("prompt_tokens", "completion_tokens"):
        total = sum(getattr(call, field) for call in usage)
        if total > MAX_TOTAL_TOKENS:
            raise ValueError(f"the calls' {field} add up to {total}, more than {MAX_TOTAL_TOKENS}")
    # A lease keeps what its job spent, prompt and completion together, in a column of the same size.
    both = sum(call.prompt_tokens + call.completion_tokens for call in usage)
    if both > MAX_TOTAL_TOKENS:
        raise ValueError(f"the calls' tokens add up to {both}, more than {MAX_TOTAL_TOKENS}")
    return usage


class EvaluationSubmission(Record):
    result: EvaluationResult
    usage: list[UsageRecord] = Field(default_factory=list)

    _usage_fits = field_validator("usage")(_totals_fit)


class StageScoreRecord(Record):
    stage: int
    epoch: int = 0  # the utility version it was scored under
    resolved: int
    total: int
    threshold: float
    passed: bool


class AgentRunRecord(Record, ScoreCounts):
    """An agent in one run: its score with the counts behind it (`ScoreCounts`)."""

    run_id: str
    run_name: str
    status: str
    reason: str | None
    score: float | None
    epoch: int = 0  # the utility version `score` was measured under
    stages: list[StageScoreRecord]
    config: dict[str, Any]


class AgentMetadata(Record):
    """`metadata.json` inside an exported agent."""

    schema_version: Literal[1] = 1
    agent_id: str
    parent_id: str | None
    second_parent_id: str | None = None  # a crossover child (a merge commit): its other parent
    lineage: list[str]  # seed first, this agent last (along first parents)
    kind: str
    name: str | None
    manifest: dict[str, Any]
    created_at: datetime
    exported_at: datetime
    runs: list[AgentRunRecord]


class ChildSubmission(BaseModel):
    """A step's outcome: the child's patch, with the step's own LLM usage (diagnosis, improver)."""

    model_config = ConfigDict(allow_inf_nan=False)

    patch: str
    diagnosis: str | None = None
    # Set when the child failed validation (does not start, its own tests fail): it is archived
    # and shown, but never becomes a parent.
    rejection: str | None = Field(default=None, max_length=20_000)
    usage: list[UsageRecord] = Field(default_factory=list)

    _usage_fits = field_validator("usage")(_totals_fit)


class StepFailure(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False)

    reason: str = Field(min_length=1, max_length=20_000)
    diagnosis: str | None = None
    usage: list[UsageRecord] = Field(default_factory=list)

    _usage_fits = field_validator("usage")(_totals_fit)
