"""Run configuration: what one evolution experiment is, validated before anything is stored.

Unknown keys and bad values are refused; pydantic's error locations give the
field path (e.g. `budget.max_usd`), which the API returns as a 422.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from contracts.benchmark_options import BenchmarkConfig
from contracts.prices import ModelPrice
from contracts.records import MAX_TOTAL_TOKENS
from contracts.safe_yaml import YamlInputError, load_yaml


class ConfigFieldError(ValueError):
    """A run configuration is well-formed but cannot run (a task or subset that does not exist,
    limits the broker cannot honour, ...); `field` is the path of the value at fault.
    `issues`, when given, are every problem found as (location, message, kind), the first at
    `field` (the API answers each, as it answers a validation error). `message` is without the
    field, which a 422 gives in its `loc` (its readers print the two together)."""

    def __init__(
        self, field: str, message: str, *, issues: list[tuple[tuple[str | int, ...], str, str]] | None = None
    ) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
        self.issues = issues or []


class StrictModel(BaseModel):
    # A stored configuration has every default filled in, so its output schema marks them required.
    # NaN and infinity have no JSON form, so a stored configuration could not be sent back.
    model_config = ConfigDict(
        extra="forbid",
        json_schema_serialization_defaults_required=True,
        allow_inf_nan=False,
        strict=True,
    )


# Each stage is a gate the driver evaluates in turn; more than this is a mistake, not a plan.
MAX_STAGES = 20


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
    """`self`: the parent improves its own code (DGM). `fixed`: one archived agent improves all.
    `hyper`: the parent runs its own `improve` command (agent.toml) on its evaluation records
    instead of Clade's diagnosis (docs/hyperagents.md); a parent without one is improved as in
    `self`, and its step's kind says so."""

    mode: Literal["self", "fixed", "hyper"] = "self"
    agent: str | None = Field(default=None, pattern=r"^[0-9a-f]{40}$")

    @model_validator(mode="after")
    def _fixed_needs_agent(self) -> ImproverConfig:
        if self.mode == "fixed" and self.agent is None:
            raise ValueError("improver mode 'fixed' needs 'agent' (an archived agent id)")
        if self.mode != "fixed" and self.agent is not None:
            raise ValueError("'agent' is only used with improver mode 'fixed'")
        return self


class CrossoverConfig(StrictModel):
    """Each step is a crossover with probability `rate`: a child merging two parents' changes
    since their common ancestor (a git merge commit). A merge that conflicts is rejected, naming
    the paths (`reject`), or given to the improver to resolve (`improver`)."""

    rate: float = Field(default=0.0, ge=0.0, le=1.0)
    on_conflict: Literal["reject", "improver"] = "reject"


ModelName = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^\S+$")]
# One model, or several in fallback order: the first is the primary, the next is tried when a call
# to one is refused as unavailable (docs/models.md says which errors fall back).
ModelChoice = ModelName | Annotated[list[ModelName], Field(min_length=1, max_length=10)]
MODEL_PURPOSES = ("solve", "diagnose", "improve", "judge")
DEFAULT_MODEL = "scripted"


def model_chain(choice: ModelChoice) -> tuple[str, ...]:
    """The names of a model choice in fallback order, each once."""
    names = [choice] if isinstance(choice, str) else choice
    return tuple(dict.fromkeys(names))


class ModelsConfig(StrictModel):
    """The model of each purpose: a name, or a list of names in fallback order (docs/models.md).

    `improve_choice: bandit` picks each step's improve model among `improve`'s names by their
    score gain per dollar so far (service/selection/model_bandit.py), the others following it
    as fallbacks; `first` always starts with the first name. `judge` is the judge's model when
    a utility's `judge` names none (JudgeConfig.model wins when given).

    `prices`: USD per million tokens of a model by name (or glob), declared by the run (0 for a
    local server); it wins over the service's price table. A run whose model has no price in
    either is refused when it is planned; the stored run lists the price of every model it uses."""

    improve: ModelChoice = DEFAULT_MODEL
    diagnose: ModelChoice = DEFAULT_MODEL
    solve: ModelChoice = DEFAULT_MODEL
    judge: ModelChoice = DEFAULT_MODEL
    improve_choice: Literal["first", "bandit"] = "first"
    prices: dict[Annotated[str, Field(min_length=1, max_length=200)], ModelPrice] = Field(
        default_factory=dict, max_length=100
    )

    def chain(self, purpose: str) -> tuple[str, ...]:
        """The purpose's models in fallback order (`purpose` one of MODEL_PURPOSES)."""
        if purpose not in MODEL_PURPOSES:
            raise ValueError(f"no model purpose {purpose!r}")
        choice: ModelChoice = getattr(self, purpose)
        return model_chain(choice)

    def primary(self, purpose: str) -> str:
        return self.chain(purpose)[0]

    def names(self) -> tuple[str, ...]:
        """Every model the run may call, each once."""
        return tuple(dict.fromkeys(name for purpose in MODEL_PURPOSES for name in self.chain(purpose)))

    @model_validator(mode="after")
    def _bandit_needs_arms(self) -> ModelsConfig:
        if self.improve_choice == "bandit" and len(self.chain("improve")) < 2:
            raise ValueError("improve_choice 'bandit' chooses among several models: give 'improve' a list")
        return self


# A run's token and evaluation counts, and sums of them (spent plus reserved), are compared and
# summed in 64-bit database integers: bounded far below 2**63 (a thousand times any real run).
MAX_RUN_COUNT = 10**15


class BudgetConfig(StrictModel):
    """Hard stops for the run; `None` means no limit of that kind (max_children always applies).

    `max_children: 0` makes an evaluation-only run: the seed agent is scored, nothing evolves.
    """

    max_children: int = Field(default=10, ge=0, le=1_000_000)
    # Task evaluations run (copies of identical code's results are free): no step opens once the
    # evaluations sent, plus the held-out phase's, would pass it; steps in flight still finish.
    max_evaluations: int | None = Field(default=None, gt=0, le=MAX_RUN_COUNT)
    max_usd: float | None = Field(default=None, gt=0)
    max_tokens: int | None = Field(default=None, gt=0, le=MAX_RUN_COUNT)
    max_wall_time_s: float | None = Field(default=None, gt=0)
    per_evaluation_usd: float | None = Field(default=None, gt=0)
    # An evaluation's tokens are stored in 32-bit columns (contracts.records): a cap above that
    # could never bind.
    per_evaluation_tokens: int | None = Field(default=None, gt=0, le=MAX_TOTAL_TOKENS)
    # The most one reply may use, any purpose: the gateway lowers every request's reply limit to it
    # (a request without one gets it), so that no model writes on to its own limit at the run's cost.
    max_reply_tokens: int | None = Field(default=None, ge=16, le=1_000_000)
    # The run stops once this many evaluations in a row (as they finished) had every model call fail
    # at the upstream: a server that is down, or a key it refuses, measures no agent. None: never.
    max_upstream_failures: int | None = Field(default=5, ge=1, le=10_000)


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


class JudgeConfig(StrictModel):
    """A model grading an evaluation's trajectory (the agent's diff and log) against `rubric`.

    It answers a score in [0, 1] and a reason; the evaluation passes the judge at `threshold`.
    `mode: tests_and_judge` (default): resolved = the tests pass AND the judge passes (the judge
    is asked only when the tests pass). `mode: judge_only`: resolved = the judge passes, for
    tasks whose tests do not measure what the rubric asks (the tests still run and are shown).
    The judge's calls are metered through the gateway as purpose "judge", within the job's lease.
    """

    # None: the run's `models.judge`. A name or a list (fallback order) replaces it for this judge.
    model: ModelChoice | None = None
    rubric: str = Field(min_length=1, max_length=20_000)
    threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    mode: Literal["tests_and_judge", "judge_only"] = "tests_and_judge"


class EpochConfig(StrictModel):
    """A new utility from step `after_steps` on (see service/driver/epochs.py for the boundary).

    `stages` replaces the stage set and `judge` the judge; what an epoch leaves out it keeps
    from the epoch before (epoch 0: the run's `stages`, test-based grading only). At the
    boundary the `rescore_top_k` best admitted agents of the old epoch, and the seed, are
    scored again under the new utility; selection then sees current-epoch scores only.
    """

    after_steps: int = Field(ge=1, le=1_000_000)
    stages: list[StageConfig] | None = Field(default=None, min_length=1, max_length=MAX_STAGES)
    judge: JudgeConfig | None = None
    rescore_top_k: int = Field(default=3, ge=1, le=1000)

    @model_validator(mode="after")
    def _changes_something(self) -> EpochConfig:
        if self.stages is None and self.judge is None:
            raise ValueError("an epoch changes the utility: give 'stages', 'judge' or both")
        return self


class HeldoutConfig(StrictModel):
    """Tasks kept out of every stage, on which the top agents are scored once the children are
    done; the run's best agent is then the one with the highest held-out Wilson lower bound.

    `tasks` or `subset` (none: every task no stage uses), optionally `sample: N` of them drawn
    with the run's `rng_seed`. The stored configuration lists the task ids chosen.

    `rounds` > 1 races the phase (successive halving): the tasks are sent in that many equal
    parts, and after each part but the last only the better half of the agents still in (by
    held-out tasks resolved so far) go on. More agents can then be looked at for the same cost.

    `choose` says how the `top_k` are chosen: by their own selection score (`score`), or by
    `family`, their selection results pooled with their parent's and children's at half
    weight (a child is its parent's code plus one edit, so its tasks say something about the
    parent; with few tasks per agent this picks fewer lucky ones), or `tree`, a posterior over
    the whole lineage whose pooling is estimated from the run's own parent-child pairs
    (docs/configuration.md). Until agents have held-out results, the run names its best by the
    same reading (`service.queries.top_agents`).

    `include_seed` makes the run's seed one of the `top_k` (in place of the last), first in the
    race's order (a tie in a round lets the seed go on), so that a run on which no edit helped
    can name the seed rather than the luckiest of its worse children.
    """

    tasks: list[Annotated[str, Field(min_length=1)]] | None = None
    subset: str | None = None
    sample: int | None = Field(default=None, ge=1)
    top_k: int = Field(default=3, ge=1, le=100)
    rounds: int = Field(default=1, ge=1, le=10)
    choose: Literal["score", "family", "tree"] = "score"
    include_seed: bool = False

    @model_validator(mode="after")
    def _one_source(self) -> HeldoutConfig:
        if self.tasks is not None and self.subset is not None:
            raise ValueError("give either 'tasks' or 'subset', not both")
        if self.tasks is not None and len(self.tasks) == 0:
            raise ValueError("'tasks' must not be empty")
        if self.tasks is not None and len(self.tasks) < self.rounds:
            raise ValueError(f"'rounds' ({self.rounds}) needs at least as many tasks ({len(self.tasks)})")
        if self.include_seed and self.top_k < 2:
            raise ValueError(
                "'include_seed' needs 'top_k' of at least 2: with 1 the seed alone is scored and always named"
            )
        return self


class RacingConfig(StrictModel):
    """The `racing` evaluation policy (docs/racing.md): a stage's tasks are sent `batch` at a
    time and, after each batch, a one-sided Wilson bound at `confidence` stops the agent early:
    it cannot reach the stage's threshold, or cannot beat its parent (`beat_parent`), or cannot
    enter the run's `top_k` (null: no such rule); or it clearly passes a stage with a threshold."""

    batch: int = Field(default=5, ge=1, le=10_000)
    confidence: float = Field(default=0.95, ge=0.5, lt=1.0)
    beat_parent: bool = True
    top_k: int | None = Field(default=3, ge=1, le=1000)


class EvaluationConfig(StrictModel):
    """How scores are measured. `trials`: each stage task is run this many times, the score
    being the fraction resolved over all of them. `reuse`: a result of identical code on the same
    task and settings is copied instead of run again, from this run (`run`, the default) or from
    any run in the archive (`archive`), or never (`none`). `heldout`: see HeldoutConfig.
    `checkpoints`: fractions of the budget (`max_evaluations` or `max_usd`) at which the pick is
    measured on the held-out tasks. `policy`: how an agent goes through the stages, every task of
    each (`stages`, DGM's) or in batches stopped early by a confidence bound (`racing`, settings in
    `racing`)."""

    trials: int = Field(default=1, ge=1, le=100)
    reuse: Literal["none", "run", "archive"] = "run"
    heldout: HeldoutConfig | None = None
    # Honest picks (docs/picks-and-cost.md): when the run's spend crosses each fraction of its
    # budget, its best agent by selection lower bound is scored on the held-out tasks.
    checkpoints: list[Annotated[float, Field(gt=0.0, le=1.0)]] = Field(default_factory=list, max_length=100)
    policy: str = Field(default="stages", min_length=1, max_length=100)
    racing: RacingConfig | None = None

    @model_validator(mode="after")
    def _checks(self) -> EvaluationConfig:
        if self.checkpoints and self.heldout is None:
            raise ValueError("'checkpoints' re-score the pick on held-out tasks: give 'heldout' too")
        if any(b <= a for a, b in zip(self.checkpoints, self.checkpoints[1:], strict=False)):
            raise ValueError(f"'checkpoints' must rise: {self.checkpoints}")
        if self.racing is not None and self.policy != "racing":
            raise ValueError("'racing' settings are only used with policy 'racing'")
        return self


class QuarantineConfig(StrictModel):
    """Tasks whose grader was caught wrong (`clade bench check --trials k`), kept out of the run's
    stages and held-out draws: those of `file` (a quarantine file, read by the service when the
    run is planned) and `tasks`. `include: true` keeps them in the pool (they are still listed).
    The stored configuration lists in `tasks` every quarantined id, the file's included."""

    file: str | None = Field(default=None, min_length=1, max_length=4096)
    tasks: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    include: bool = False


class RunConfig(StrictModel):
    version: Literal[1] = 1
    name: str = Field(default="run", min_length=1, max_length=200)
    seed_agent: str = Field(pattern=r"^[0-9a-f]{40}$")
    # A registered benchmark; its options are checked by its own model when the run is planned.
    benchmark: BenchmarkConfig = Field(default_factory=BenchmarkConfig)
    stages: list[StageConfig] = Field(
        default_factory=lambda: [StageConfig()], min_length=1, max_length=MAX_STAGES
    )
    selection: SelectionConfig = Field(default_factory=SelectionConfig)
    improver: ImproverConfig = Field(default_factory=ImproverConfig)
    crossover: CrossoverConfig = Field(default_factory=CrossoverConfig)
    models: ModelsConfig = Field(default_factory=ModelsConfig)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    parallelism: int = Field(default=2, ge=1, le=1024)
    rng_seed: int = 0
    # Versioned utilities (issue 12): none keeps one utility for the whole run.
    epochs: list[EpochConfig] = Field(default_factory=list, max_length=100)
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig)
    quarantine: QuarantineConfig | None = None


def load_run_config(path: Path) -> RunConfig:
    """Read a YAML or JSON run configuration; raises pydantic's ValidationError on bad input."""
    try:
        data = load_yaml(path.read_text())
    except YamlInputError as exc:
        raise YamlInputError(f"{path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a run configuration must be a mapping at the top level")
    return RunConfig.model_validate(data)
