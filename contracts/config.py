"""Run configuration: what one evolution experiment is, validated before anything is stored.

Unknown keys and bad values are refused; pydantic's error locations give the
field path (e.g. `budget.max_usd`), which the API returns as a 422.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from contracts.benchmark_options import BenchmarkConfig, CladeMiniConfig, validate_benchmark


class ConfigFieldError(ValueError):
    """A run configuration is well-formed but cannot run (a task or subset that does not exist,
    limits the broker cannot honour, ...); `field` is the path of the value at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class StrictModel(BaseModel):
    # A stored configuration has every default filled in, so its output schema marks them required.
    # NaN and infinity have no JSON form, so a stored configuration could not be sent back.
    model_config = ConfigDict(
        extra="forbid", json_schema_serialization_defaults_required=True, allow_inf_nan=False
    )


class StageConfig(StrictModel):
    """An ordered task subset; the run only goes on to the next stage at `threshold`.

    `sample: N` draws N tasks at random (with the run's `rng_seed`) from the stage's
    tasks or subset; the drawn ids are recorded with the run.
    """

    tasks: list[Annotated[str, Field(min_length=1)]] | None = None
    subset: str | None = None
    sample: int | None = Field(default=None, ge=1)
    threshold: float = Field(default=0.0, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _one_source(self) -> StageConfig:
        if self.tasks is not None and self.subset is not None:
            raise ValueError("give either 'tasks' or 'subset', not both")
        if self.tasks is not None and len(self.tasks) == 0:
            raise ValueError("'tasks' must not be empty")
        return self


class SelectionConfig(StrictModel):
    strategy: str = "score_child_prop"
    params: dict[str, float] = Field(default_factory=dict)


class ImproverConfig(StrictModel):
    """`self`: the parent improves its own code (DGM). `fixed`: one archived agent improves all."""

    mode: Literal["self", "fixed"] = "self"
    agent: str | None = Field(default=None, pattern=r"^[0-9a-f]{40}$")

    @model_validator(mode="after")
    def _fixed_needs_agent(self) -> ImproverConfig:
        if self.mode == "fixed" and self.agent is None:
            raise ValueError("improver mode 'fixed' needs 'agent' (an archived agent id)")
        if self.mode == "self" and self.agent is not None:
            raise ValueError("'agent' is only used with improver mode 'fixed'")
        return self


class ModelsConfig(StrictModel):
    improve: str = "scripted"
    diagnose: str = "scripted"
    solve: str = "scripted"


class BudgetConfig(StrictModel):
    """Hard stops for the run; `None` means no limit of that kind (max_children always applies).

    `max_children: 0` makes an evaluation-only run: the seed agent is scored, nothing evolves.
    """

    max_children: int = Field(default=10, ge=0, le=1_000_000)
    max_usd: float | None = Field(default=None, gt=0)
    max_tokens: int | None = Field(default=None, gt=0)
    max_wall_time_s: float | None = Field(default=None, gt=0)
    per_evaluation_usd: float | None = Field(default=None, gt=0)
    per_evaluation_tokens: int | None = Field(default=None, gt=0)


class LimitsConfig(StrictModel):
    """Sandbox and task limits; Celery's soft/hard time limits derive from these."""

    solve_timeout_s: int = Field(default=300, ge=5, le=24 * 3600)
    improve_timeout_s: int = Field(default=600, ge=5, le=24 * 3600)
    test_timeout_s: int = Field(default=300, ge=5, le=24 * 3600)
    memory_mb: int = Field(default=2048, ge=128, le=256 * 1024)
    cpus: float = Field(default=1.0, gt=0, le=64)
    pids: int = Field(default=256, ge=16, le=65536)
    max_agent_steps: int = Field(default=30, ge=1, le=10_000)
    # Slack for setup, grading and reporting on top of the timeouts above, in Celery's hard limits.
    overhead_s: int = Field(default=120, ge=5, le=3600)


class HeldoutConfig(StrictModel):
    """Tasks kept out of every stage, on which the top agents are scored once the children are
    done; the run's best agent is then the one with the highest held-out Wilson lower bound.

    `tasks` or `subset` (none: every task no stage uses), optionally `sample: N` of them drawn
    with the run's `rng_seed`. The stored configuration lists the task ids chosen.
    """

    tasks: list[Annotated[str, Field(min_length=1)]] | None = None
    subset: str | None = None
    sample: int | None = Field(default=None, ge=1)
    top_k: int = Field(default=3, ge=1, le=100)

    @model_validator(mode="after")
    def _one_source(self) -> HeldoutConfig:
        if self.tasks is not None and self.subset is not None:
            raise ValueError("give either 'tasks' or 'subset', not both")
        if self.tasks is not None and len(self.tasks) == 0:
            raise ValueError("'tasks' must not be empty")
        return self


class EvaluationConfig(StrictModel):
    """How scores are measured. `trials`: each stage task is run this many times, the score
    being the fraction resolved over all of them. `reuse`: a result of identical code on the same
    task and settings is copied instead of run again, from this run (`run`, the default) or from
    any run in the archive (`archive`), or never (`none`). `heldout`: see HeldoutConfig."""

    trials: int = Field(default=1, ge=1, le=100)
    reuse: Literal["none", "run", "archive"] = "run"
    heldout: HeldoutConfig | None = None


class RunConfig(StrictModel):
    version: Literal[1] = 1
    name: str = Field(default="run", min_length=1, max_length=200)
    seed_agent: str = Field(pattern=r"^[0-9a-f]{40}$")
    # One options model per benchmark, chosen by `benchmark.name` (see benchmark_options.py).
    benchmark: BenchmarkConfig = Field(default_factory=CladeMiniConfig)
    stages: list[StageConfig] = Field(default_factory=lambda: [StageConfig()], min_length=1)
    selection: SelectionConfig = Field(default_factory=SelectionConfig)
    improver: ImproverConfig = Field(default_factory=ImproverConfig)
    models: ModelsConfig = Field(default_factory=ModelsConfig)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    parallelism: int = Field(default=2, ge=1, le=1024)
    rng_seed: int = 0
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig)

    _benchmark_paths = field_validator("benchmark", mode="wrap")(validate_benchmark)


def load_run_config(path: Path) -> RunConfig:
    """Read a YAML or JSON run configuration; raises pydantic's ValidationError on bad input."""
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a run configuration must be a mapping at the top level")
    return RunConfig.model_validate(data)
