"""The messages the run driver sends to workers through Celery (JSON, versioned).

A job carries every fact the driver has that the worker needs, so that a worker
reads nothing from the service but agents' code.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from contracts.benchmark_options import BenchmarkConfig
from contracts.config import JudgeConfig, LimitsConfig
from contracts.prices import ModelPrice

IMPROVE_TASK = "clade.improve"
EVALUATE_TASK = "clade.evaluate"


class Budget(BaseModel):
    """What one job's LLM calls may spend; `None` means no limit of that kind.

    The run figures are the job's lease: the part of the run's money and tokens the driver
    reserved for this job before sending it (jobs in flight together never hold more than
    the run has left). The gateway refuses calls beyond any of these figures.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    evaluation_usd: float | None = Field(default=None, ge=0)
    evaluation_tokens: int | None = Field(default=None, ge=0)
    run_remaining_usd: float | None = Field(default=None, ge=0)  # the lease's money
    run_remaining_tokens: int | None = Field(default=None, ge=0)  # the lease's tokens
    reply_tokens: int | None = Field(default=None, ge=1)  # the run's `budget.max_reply_tokens`

    def less(self, usd: float, tokens: int) -> Budget:
        """What is left of the lease once `usd` and `tokens` of it are spent."""
        return self.model_copy(
            update={
                "run_remaining_usd": None
                if self.run_remaining_usd is None
                else max(0.0, self.run_remaining_usd - usd),
                "run_remaining_tokens": None
                if self.run_remaining_tokens is None
                else max(0, self.run_remaining_tokens - tokens),
            }
        )


class Job(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[3] = 3
    run_id: str
    limits: LimitsConfig
    budget: Budget
    # The run's stored prices (`models.prices`, spelled out when it was planned): every call is
    # priced by the model the run configured for it, with these before the worker's own table.
    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    # Made by the driver for this dispatch; every answer about the job shows it (header
    # JOB_SECRET_HEADER), so only the job that was sent can answer it (docs/job-bound.md).
    secret: str = Field(min_length=32, max_length=256, repr=False)


JOB_SECRET_HEADER = "X-Clade-Job-Secret"


class FailedEvaluation(BaseModel):
    """The unresolved evaluation of the parent the driver chose to diagnose, in excerpts
    small enough for a prompt (the diff's start, the trajectory's and the log's end)."""

    model_config = ConfigDict(extra="forbid")

    evaluation_id: str
    task_id: str
    grade_reason: str = ""
    agent_failure: str | None = None  # why the agent's own run failed, if it did
    failing_tests: list[str] = Field(default_factory=list)  # FAIL_TO_PASS tests that did not pass
    broken_tests: list[str] = Field(default_factory=list)  # PASS_TO_PASS tests that broke
    diff: str = ""
    trajectory_tail: str = ""  # the last messages of the agent's trajectory, one JSON per line
    agent_log_tail: str = ""


class CrossoverPart(BaseModel):
    """A crossover step whose merge conflicted: the improver resolves the conflict markers in the
    merge of `parent_id` and `second_parent_id` (fetched from the service) instead of a diagnosis."""

    model_config = ConfigDict(extra="forbid")

    second_parent_id: str
    conflicts: list[str]  # the paths git could not merge


class EvaluationRecord(FailedEvaluation):
    """One of the parent's evaluations, resolved or not, for its own `improve` command."""

    resolved: bool = False


class ImproveJob(Job):
    """Make one child: diagnose `parent_id` on `failure`, let the improver edit a copy of its code."""

    step_id: str
    parent_id: str
    improver_id: str  # the parent itself in mode `self`, the fixed agent in mode `fixed`
    diagnose_model: str
    improve_model: str  # the step's choice (models.improve_choice): the first name, or the bandit's
    # Tried in order when a call to the model before is refused as unavailable (docs/models.md).
    diagnose_fallbacks: list[str] = Field(default_factory=list)
    improve_fallbacks: list[str] = Field(default_factory=list)
    benchmark: BenchmarkConfig  # for the failed task's statement
    failure: FailedEvaluation | None  # None: the parent resolved every task it was evaluated on
    crossover: CrossoverPart | None = None  # a conflicting crossover: resolve it, no diagnosis
    # Hyper steps: the parent runs its own `improve` command on these records instead of Clade's
    # diagnosis and improver (docs/hyperagents.md); None for every other step.
    records: list[EvaluationRecord] | None = None
    # Group evolution: the run's shared experience pool, for the diagnosis and improvement prompts.
    experience: str | None = None


class EvaluateJob(Job):
    """Run one agent on one task and grade it."""

    evaluation_id: str
    agent_id: str
    task_id: str
    solve_model: str
    solve_fallbacks: list[str] = Field(default_factory=list)  # as ImproveJob's
    benchmark: BenchmarkConfig
    # The utility's judge, when the evaluation's epoch has one: it grades after the tests.
    judge: JudgeConfig | None = None
