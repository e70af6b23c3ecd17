"""Public shapes of the API: what clients send and what they get back."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from contracts.config import JudgeConfig, RunConfig
from contracts.records import EvaluationResult
from contracts.scores import RawScoreCounts, ScoreCounts
from contracts.vocabulary import EvaluationPurpose
from service.lifecycle import EvaluationStatus, MemberStatus, RunStatus

T = TypeVar("T")

# The largest offset (or event id to read after) a database can take: a signed 64-bit integer.
MAX_OFFSET = 2**63 - 1


class ErrorBody(BaseModel):
    """Every error answer but a 422: what went wrong, in a sentence."""

    detail: str


class ValidationIssue(BaseModel):
    """One problem with a request, at its place: `["body", "stages", 0, "subset"]`, `["query", "offset"]`."""

    loc: list[str | int]
    msg: str
    type: str


class ValidationErrorBody(BaseModel):
    """Every 422, whether the request's shape or its meaning is wrong: the same list of issues."""

    detail: list[ValidationIssue]


class Page(BaseModel, Generic[T]):
    items: list[T]
    total: int
    limit: int
    offset: int


class Budget(BaseModel):
    max_children: int
    max_usd: float | None
    max_tokens: int | None
    max_wall_time_s: float | None


class Progress(BaseModel):
    children: int
    usd: float  # spent: the metered calls recorded
    tokens: int
    # Held by the leases of jobs in flight (reserved, not yet spent; see service/leases.py).
    usd_reserved: float = 0.0
    tokens_reserved: int = 0
    elapsed_s: float
    steps_in_flight: int
    best_score: float | None
    best_agent_id: str | None  # by held-out lower bound once the held-out phase is over
    # The best agent's 95% Wilson interval on its selection tasks, and its held-out result.
    best_score_low: float | None = None
    best_score_high: float | None = None
    best_heldout_score: float | None = None
    best_heldout_low: float | None = None
    best_heldout_high: float | None = None
    evaluations_reused: int = 0  # results copied from identical code instead of run again


class RunPublic(BaseModel):
    id: str
    name: str
    status: RunStatus
    stop_reason: str | None
    seed_agent_id: str
    created_at: datetime
    finished_at: datetime | None
    budget: Budget
    progress: Progress


class EpochStage(BaseModel):
    task_ids: list[str]
    threshold: float


class EpochPublic(BaseModel):
    """One version of a run's utility (service/driver/epochs.py); epoch 0 is the run's stages."""

    epoch: int
    after_steps: int  # it begins once this many steps were opened and the old epoch's work is done
    stages: list[EpochStage]  # task ids fixed when the run was created
    judge: JudgeConfig | None
    rescore_top_k: int  # agents re-scored when it begins (besides the seed); 0 for epoch 0
    started: bool


class CheckpointPublic(BaseModel):
    """One of the run's `evaluation.checkpoints` (docs/picks-and-cost.md): the agent scored on the
    held-out tasks when the spend crossed it, and the run's pick once that scoring was done."""

    fraction: float  # of the budget
    spent: float  # the fraction of the budget spent when it was reached
    final: bool  # reached because the search stopped, not by spending
    reached_at: datetime
    agent_id: str | None  # the run's best agent then, by `chosen_by`; null if none was admitted
    selection_low: float | None  # its Wilson lower bound on its selection tasks
    chosen_by: str  # score (the highest selection lower bound), family or tree (heldout.choose)
    scored_at: datetime | None = None  # null until its held-out evaluations are done
    heldout_resolved: int | None = None
    heldout_total: int | None = None
    heldout_low: float | None = None
    heldout_high: float | None = None
    pick_agent_id: str | None = None  # the run's pick after it: the best held-out lower bound


class RunDetail(RunPublic):
    config: RunConfig  # as validated when the run was created, defaults filled in
    stage_tasks: list[list[str]]  # the task ids of each stage, fixed when the run was created
    epoch: int = 0  # the utility version in force: selection sees this epoch's scores only
    epochs: list[EpochPublic] = Field(default_factory=list)  # every version, epoch 0 first
    checkpoints: list[CheckpointPublic] = Field(default_factory=list)  # reached so far, oldest first


class AgentPublic(BaseModel):
    id: str
    parent_id: str | None
    kind: str
    name: str | None
    created_at: datetime
    manifest: dict[str, Any]
    second_parent_id: str | None  # a crossover child (a merge commit): its other parent


class LineageNode(RawScoreCounts):
    """An agent as the lineage tree draws it: its place in one run's archive, with raw counts."""

    # Every field is always sent: the document marks the counts' fields required too.
    model_config = ConfigDict(json_schema_serialization_defaults_required=True)

    id: str
    parent_id: str | None
    status: MemberStatus
    reason: str | None
    score: float | None  # resolved / attempted over the selection evaluations of `epoch`
    stage_reached: int
    children: int
    step: int | None
    created_at: datetime
    second_parent_id: str | None  # a crossover child's other parent
    epoch: int  # the utility version its score was measured under
    island: int | None
    niche: str | None  # MAP-Elites behaviour descriptor
    group: str | None  # group evolution: the group its step belonged to
    meta_changed: bool | None  # hyperagent mode: the child changed its own improvement procedure
    # The racing evaluation policy: why its last stage's measurement stopped (null: not raced).
    race_stop: str | None = None


class RunAgentPublic(LineageNode, ScoreCounts):
    """An agent as it stands in one run's archive, its scores with 95% Wilson intervals."""

    heldout_score: float | None


class Lineage(BaseModel):
    run_id: str
    nodes: list[LineageNode]


class UsagePoint(BaseModel):
    """Totals of the run's metered LLM calls up to and including `at`."""

    at: datetime
    usd: float
    tokens: int
    calls: int


class PurposeUsage(BaseModel):
    purpose: str
    usd: float
    tokens: int
    calls: int


class RunUsage(BaseModel):
    run_id: str
    points: list[UsagePoint]
    by_purpose: list[PurposeUsage]


class LiveLineage(Lineage):
    """The lineage and the newest event id read before it: poll events after `cursor`."""

    cursor: int  # 0 when the run has no events yet


class StageScorePublic(BaseModel):
    stage: int
    epoch: int = 0  # the utility version it was scored under
    resolved: int
    total: int
    threshold: float
    passed: bool
    stop: str | None = None  # the racing evaluation policy: why the stage's measurement stopped


class EvaluationPublic(BaseModel):
    id: str
    task_id: str
    stage: int
    epoch: int = 0  # the utility version it was run under
    status: EvaluationStatus
    resolved: bool | None
    cost_usd: float
    prompt_tokens: int
    completion_tokens: int
    finished_at: datetime | None
    # From the result: grading found the results forged; paths of the diff left out of grading.
    tampered: bool = False
    dropped_for_grading: list[str] = Field(default_factory=list)
    trial: int = 0
    purpose: str = EvaluationPurpose.SELECTION  # or heldout, rescore: only selection feeds the search
    reused_from: str | None = None  # the evaluation whose result was copied (identical code, same key)
    # The worker token that submitted the result: an issued token's id and name, or local/admin.
    worker_token_id: str | None = None
    worker_name: str | None = None


class EvaluationDetail(EvaluationPublic):
    result: EvaluationResult | None


class AgentInRun(ScoreCounts):  # the score's counts and 95% Wilson intervals come first
    run_id: str
    status: MemberStatus
    reason: str | None
    score: float | None
    epoch: int = 0  # the utility version `score` was measured under
    stages: list[StageScorePublic]  # every epoch's, by epoch then stage
    race_stop: str | None = None  # the racing evaluation policy: why its last stage stopped
    diagnosis: str | None
    evaluations: list[EvaluationPublic]
    usd: float
    tokens: int


class AgentDetail(AgentPublic):
    lineage: list[str]
    children: list[str]
    runs: list[AgentInRun]


class StateChange(BaseModel):
    action: str = Field(pattern="^(pause|resume|cancel)$")


class ConsistencyPublic(BaseModel):
    agents_checked: int
    refs_restored: list[str]
    refs_removed: list[str]
    missing_commits: list[str]


class BenchmarkTasks(BaseModel):
    """One benchmark as its options load it: every task id, and each named subset's."""

    name: str
    tasks: list[str]
    subsets: dict[str, list[str]]


class DriverHealth(BaseModel):
    enabled: bool
    alive: bool
    # The end of the last tick in which every running run moved (UTC).
    last_success_at: datetime | None
    consecutive_failures: int
    last_error: str | None
    retry_in_s: float | None  # the wait before the next tick: the interval, longer while ticks fail
    stale_after_s: float


class HealthPublic(BaseModel):
    """200 with status "ok"; 503 with status "unhealthy" and the problem, same shape."""

    status: Literal["ok", "unhealthy"]
    problem: str | None
    driver: DriverHealth
