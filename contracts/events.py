"""Run events: one typed model per kind, and `RunEvent`, their union discriminated by `kind`.

The service appends events as a run moves (`service/events.py` stores them); `clade run watch`
and the live dashboard read them from `GET /api/runs/{id}/events`. A stored event is its kind and
its payload as JSON, so a payload model here is the schema of one kind's stored payload, and an
event model is what the API answers: the row's `id`, `kind`, typed `payload` and `created_at`.

A stored payload that no longer fits its model (written by another version of Clade) is answered
as an `unreadable` event holding it as it is, so one old row never stops a feed.

`docs/events.md` is generated from this module (`python -m contracts.events_doc`): each model's
docstring says when the event is emitted, each field's description what it holds. Adding a kind is
described in `docs/extend/event-kind.md`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, JsonValue, PlainSerializer

from contracts.config import JudgeConfig

# As `datetime.isoformat()` writes it (`+00:00`, not `Z`): the form the feed has always answered.
IsoTime = Annotated[datetime, PlainSerializer(lambda value: value.isoformat(), return_type=str)]


def _absent_when_none(value: object) -> bool:
    return value is None


def optional(description: str) -> Any:
    """A field that is left out of the payload, not stored as null, when it does not apply."""
    return Field(default=None, exclude_if=_absent_when_none, description=description)


class Payload(BaseModel):
    """One kind's payload. Keys the model does not know (another version's) are ignored on reading."""

    model_config = ConfigDict(allow_inf_nan=False, validate_by_name=True, serialize_by_alias=True)


# -- the archive ---------------------------------------------------------------------------------


class SeedImported(Payload):
    """A seed agent entered the archive (`clade seed import`, `POST /api/seeds`). It belongs to no
    run, so no run's feed lists it."""

    agent_id: str = Field(description="The seed's commit sha: its agent id.")
    name: str | None = Field(
        description="The seed's name (given, or from its `agent.toml`); null if neither."
    )


# -- a run's state -------------------------------------------------------------------------------


class RunCreated(Payload):
    """A run was created and started (`POST /api/runs`); its seed is its first agent."""

    name: str = Field(description="The run's name.")


class RunPaused(Payload):
    """A user paused the run: no new work is sent until it is resumed."""

    action: Literal["pause"] = Field(description="The action asked for.")


class RunRunning(Payload):
    """A user resumed a paused run."""

    action: Literal["resume"] = Field(description="The action asked for.")


class RunCancelled(Payload):
    """The run was cancelled: work in flight is cancelled and agents still being scored are rejected."""

    reason: str = Field(description="Why (`cancel requested`).")


class RunCompleted(Payload):
    """The driver completed the run: its budget is spent or its work is done."""

    reason: str = Field(description="Why the run stopped, as its `stop_reason` shows it.")


# -- steps and children --------------------------------------------------------------------------


class StepOpened(Payload):
    """A step opened: a parent was chosen and a worker is asked to make its child."""

    step: int = Field(description="The step's number in the run.")
    parent_id: str = Field(description="The chosen parent's agent id.")


class CrossoverOpened(Payload):
    """An opened step drew a crossover: its child merges the parent with a second, unrelated one."""

    step: int = Field(description="The step's number in the run.")
    parent_id: str = Field(description="The first parent's agent id.")
    second_parent_id: str = Field(description="The second parent's agent id.")


class ChildCreated(Payload):
    """A step's child entered the archive (a worker's patch, or the service's clean merge); it is
    then scored stage by stage, unless it failed validation."""

    agent_id: str = Field(description="The child's commit sha: its agent id.")
    parent_id: str = Field(description="The parent's agent id.")
    step: int = Field(description="The step's number in the run.")
    rejection: str | None = Field(
        description="Why the child was rejected at once (it failed validation); null: it is scored."
    )
    files: list[str] = Field(
        default_factory=list,
        description="The files its patch changed (read by a group run's experience pool).",
    )
    second_parent_id: str | None = optional("A crossover's second parent; absent otherwise.")
    worker: str | None = optional("The worker that made the patch; absent for the service's own merge.")


class StepRejected(Payload):
    """A step ended without a child (an empty patch, the improver failed, ...)."""

    step: int = Field(description="The step's number in the run.")
    reason: str = Field(description="Why.")
    worker: str | None = optional("The worker that said so; absent when the service decided.")


class EvaluationDone(Payload):
    """An evaluation (an agent on one task) finished: measured by a worker, or reused from an
    identical earlier one."""

    evaluation_id: str = Field(description="The evaluation's id.")
    agent_id: str = Field(description="The agent scored.")
    task_id: str = Field(description="The task.")
    resolved: bool | None = Field(description="Whether the agent resolved the task.")
    reused_from: str | None = optional("The evaluation whose result was reused; absent when measured.")
    worker: str | None = optional("The worker that measured it; absent when reused.")
    infrastructure_failure: str | None = optional(
        "Why the evaluation could not be run (it counts as unresolved); absent when it ran."
    )
    warnings: list[str] | None = optional(
        "What its model calls showed (e.g. `the model never used a tool`); absent when nothing."
    )


class AgentVerdict(Payload):
    """An agent's verdict after its stages (admitted or rejected)."""

    agent_id: str = Field(description="The agent.")
    score: float | None = Field(
        description="Its selection score (resolved / attempted over its stages); null when its policy"
        " admitted it unmeasured (hgm-paper)."
    )
    reason: str | None = Field(description="Why it was rejected (the stage it failed); null when admitted.")
    step: int | None = Field(
        description="The number of the step that made it (0: the seed; null: none of this run's)."
    )


class AgentAdmitted(AgentVerdict):
    """An agent passed its stages and became a parent candidate."""


class AgentRejected(AgentVerdict):
    """An agent missed a stage's threshold (or its run ended while it was scored)."""


class AgentRescored(Payload):
    """An agent re-scored at an epoch boundary finished its new epoch's stages."""

    agent_id: str = Field(description="The agent.")
    epoch: int = Field(description="The epoch it was scored in.")
    score: float = Field(description="Its score in that epoch.")
    resolved: int = Field(description="Evaluations it resolved.")
    attempted: int = Field(description="Evaluations it attempted.")


class StageStopped(Payload):
    """The `racing` evaluation policy ended an agent's measurement on a stage: after a batch its
    confidence bound decided (or the stage's every task was in). Emitted once per agent, stage
    and epoch."""

    agent_id: str = Field(description="The agent.")
    step: int | None = Field(
        description="The number of the step that made it (0: the seed; null: none of this run's)."
    )
    epoch: int = Field(description="The epoch (utility version) it is scored in.")
    stage: int = Field(description="The stage, counted from 0.")
    reason: str = Field(
        description="Why it stopped: stage_complete, clearly_passes, cannot_reach_threshold, "
        "cannot_beat_parent or below_top_k."
    )
    passed: bool = Field(description="Whether the stage counts as passed (the agent goes on or is admitted).")
    tasks: int = Field(description="Tasks of the stage it was measured on.")
    stage_tasks: int = Field(description="Tasks the stage has.")
    resolved: int = Field(description="Evaluations it resolved on them (trials included).")
    evaluations: int = Field(description="Evaluations counted (tasks times trials).")
    low: float = Field(description="The lower confidence bound of its resolved fraction.")
    high: float = Field(description="The upper confidence bound of its resolved fraction.")
    detail: str | None = optional("The comparison that stopped it, in words; absent at stage_complete.")


# -- epochs, islands, groups, held-out -----------------------------------------------------------


class StageUtility(Payload):
    """One stage of an epoch's utility."""

    tasks: int = Field(description="The stage's number of tasks.")
    threshold: float = Field(description="The share it must resolve to go on.")


class Utility(Payload):
    """What an epoch scores agents by: its stages and its judge."""

    version: int = Field(description="The epoch's number: the utility's version.")
    stages: list[StageUtility] = Field(description="The epoch's stages.")
    judge: JudgeConfig | None = Field(description="The epoch's judge; null for test-based grading only.")


class EpochStarted(Payload):
    """A new epoch began: from now on agents are scored under its utility (stages, judge)."""

    epoch: int = Field(description="The new epoch's number.")
    after_steps: int = Field(description="The step count the epoch starts after.")
    steps_opened: int = Field(description="Steps opened when it began.")
    utility: Utility = Field(description="The new utility.")
    rescore: list[str] = Field(
        description="The agents scored again under it (the best of the old epoch, and the seed)."
    )


class IslandMigration(Payload):
    """An agent migrated between islands before a step's draw (islands strategy)."""

    agent_id: str = Field(description="The agent.")
    from_: int = Field(alias="from", description="The island it left.")
    to: int = Field(description="The island it joined.")
    step: int = Field(description="The step whose draw follows.")


class ExperienceEntry(Payload):
    """One finished step of a group run, as its experience pool lists it."""

    model_config = ConfigDict(extra="forbid")

    step: int = Field(description="The step's number.")
    group: str | None = Field(description="The step's group.")
    parent_id: str = Field(description="Its parent.")
    parent_score: float | None = Field(description="The parent's score.")
    child_id: str | None = Field(description="Its child, if it made one.")
    child_score: float | None = Field(description="The child's score.")
    change: float | None = Field(description="Child score minus parent score, when both are known.")
    outcome: str = Field(description="The step's status: admitted, rejected or failed.")
    reason: str | None = Field(description="Why it was rejected or failed.")
    tried: str = Field(description="The diagnosis's title line.")
    files: list[str] = Field(default_factory=list, description="The files its patch changed.")


class ExperienceUpdated(Payload):
    """A group run's experience pool has a new version (steps finished since the last one); the
    next group's improve jobs carry it."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = Field(default=1, description="The pool's format.")
    run_id: str = Field(description="The run.")
    version: int = Field(ge=1, description="The pool's version, from 1.")
    finished_steps: int = Field(description="The finished steps this version summarises.")
    entries: list[ExperienceEntry] = Field(description="Those that fit in `text`, in its order.")
    left_out: int = Field(description="Finished steps whose entry did not fit.")
    text: str = Field(description="The pool as improve jobs read it.")


class HeldoutStarted(Payload):
    """The held-out phase began: the run's top agents are scored on tasks selection never saw."""

    agents: list[str] = Field(description="The agents chosen, best first.")
    tasks: list[str] = Field(description="The held-out tasks.")
    measured: int = Field(
        default=0, description="Held-out evaluations the chosen agents had already (from checkpoints)."
    )


class HeldoutScore(Payload):
    """One agent's score on the held-out tasks."""

    resolved: int = Field(description="Held-out evaluations resolved.")
    total: int = Field(description="Held-out evaluations run.")
    low: float = Field(
        description="The lower bound of resolved / total: a Wilson interval that holds for every"
        " agent the run scored on the held-out tasks at once."
    )


class HeldoutFinished(Payload):
    """The held-out phase is over; the best agent is the one with the highest lower bound (in a
    raced phase, among those measured on the most held-out tasks)."""

    agents: dict[str, HeldoutScore] = Field(
        description="Each chosen agent's held-out score, by agent id (partial for one stopped in a race)."
    )
    best_agent_id: str | None = Field(description="The run's best agent now.")


class CheckpointReached(Payload):
    """The run's spend crossed one of its `evaluation.checkpoints` (or its search stopped before
    it did): its best agent, by the rule its held-out phase chooses candidates by, is scored on
    the held-out tasks, charged to the budget."""

    fraction: float = Field(description="The checkpoint: a fraction of the budget.")
    spent: float = Field(description="The fraction of the budget spent when it was reached.")
    agent_id: str | None = Field(description="The agent scored; null if none was admitted yet.")
    selection_low: float | None = Field(
        description="That agent's Wilson lower bound on its selection tasks; null with no agent."
    )
    final: bool = Field(description="Reached because the search stopped, not by spending.")
    chosen_by: str = Field(
        default="score",
        description="How the agent was chosen (`evaluation.heldout.choose`): `score`, the highest"
        " selection lower bound; `family` or `tree`, the best by that estimate of its relatives'"
        " results.",
    )


class CheckpointScored(Payload):
    """A checkpoint's agent is scored on the held-out tasks; the run's pick is now the agent with
    the highest held-out Wilson lower bound."""

    fraction: float = Field(description="The checkpoint.")
    agent_id: str = Field(description="The agent scored.")
    resolved: int = Field(description="Its held-out evaluations resolved.")
    total: int = Field(description="Its held-out evaluations run.")
    low: float = Field(
        description="The lower bound of resolved / total: a Wilson interval that holds for every"
        " agent the run has scored on the held-out tasks so far at once."
    )
    high: float = Field(description="The same interval's upper bound.")
    pick_agent_id: str = Field(description="The run's pick now: the best held-out lower bound.")


class PolicyRecord(Payload):
    """A selection policy wrote down part of its books under a kind of its own, one no model here
    has (e.g. a strategy installed from outside Clade; see docs/extend/strategy.md)."""

    name: str = Field(description="The policy's own kind, as it reads its records back.")
    data: dict[str, JsonValue] = Field(description="What it recorded.")


# -- the service ---------------------------------------------------------------------------------


class DriverError(Payload):
    """The run driver failed to move this run (`scope: run`) or any run (`scope: driver`), e.g.
    the database was unreachable; written once the database answers again. Its `error` is shown
    with the admin token only."""

    scope: Literal["run", "driver"] = Field(
        description="`run`: this run's move failed; `driver`: no run could be driven."
    )
    error: str = Field(description="The error in one line.")
    since: IsoTime = Field(description="When the failures began.")
    failed_ticks: int = Field(description="Driver ticks that failed in a row.")


class Unreadable(Payload):
    """Not emitted: a stored event whose payload no longer fits its kind's model (or whose kind is
    unknown), answered as stored so that the feed goes on."""

    # Whatever the row holds is answered (a NaN a hand-written SQLite row may hold reads as null).
    model_config = ConfigDict(allow_inf_nan=True)

    stored_kind: str = Field(description="The kind stored with the event.")
    stored_payload: JsonValue = Field(description="The payload as stored.")
    problem: str = Field(description="What does not fit.")


# -- what the API answers ------------------------------------------------------------------------


class Envelope(BaseModel):
    """The fields every event has; each kind narrows `kind` and `payload` (in this order, as answered)."""

    id: int = Field(description="The event's id: poll with `after` set to the last one seen.")
    kind: str = Field(description="What happened: picks the payload's model.")
    payload: Payload = Field(description="What the event says.")
    created_at: IsoTime = Field(description="When it was recorded.")


class SeedImportedEvent(Envelope):
    kind: Literal["seed_imported"]
    payload: SeedImported


class RunCreatedEvent(Envelope):
    kind: Literal["run_created"]
    payload: RunCreated


class RunPausedEvent(Envelope):
    kind: Literal["run_paused"]
    payload: RunPaused


class RunRunningEvent(Envelope):
    kind: Literal["run_running"]
    payload: RunRunning


class RunCancelledEvent(Envelope):
    kind: Literal["run_cancelled"]
    payload: RunCancelled


class RunCompletedEvent(Envelope):
    kind: Literal["run_completed"]
    payload: RunCompleted


class StepOpenedEvent(Envelope):
    kind: Literal["step_opened"]
    payload: StepOpened


class CrossoverOpenedEvent(Envelope):
    kind: Literal["crossover_opened"]
    payload: CrossoverOpened


class ChildCreatedEvent(Envelope):
    kind: Literal["child_created"]
    payload: ChildCreated


class StepRejectedEvent(Envelope):
    kind: Literal["step_rejected"]
    payload: StepRejected


class EvaluationDoneEvent(Envelope):
    kind: Literal["evaluation_done"]
    payload: EvaluationDone


class AgentAdmittedEvent(Envelope):
    kind: Literal["agent_admitted"]
    payload: AgentAdmitted


class AgentRejectedEvent(Envelope):
    kind: Literal["agent_rejected"]
    payload: AgentRejected


class AgentRescoredEvent(Envelope):
    kind: Literal["agent_rescored"]
    payload: AgentRescored


class StageStoppedEvent(Envelope):
    kind: Literal["stage_stopped"]
    payload: StageStopped


class EpochStartedEvent(Envelope):
    kind: Literal["epoch_started"]
    payload: EpochStarted


class IslandMigrationEvent(Envelope):
    kind: Literal["island_migration"]
    payload: IslandMigration


class ExperienceUpdatedEvent(Envelope):
    kind: Literal["experience_updated"]
    payload: ExperienceUpdated


class HeldoutStartedEvent(Envelope):
    kind: Literal["heldout_started"]
    payload: HeldoutStarted


class HeldoutFinishedEvent(Envelope):
    kind: Literal["heldout_finished"]
    payload: HeldoutFinished


class CheckpointReachedEvent(Envelope):
    kind: Literal["checkpoint_reached"]
    payload: CheckpointReached


class CheckpointScoredEvent(Envelope):
    kind: Literal["checkpoint_scored"]
    payload: CheckpointScored


class PolicyRecordEvent(Envelope):
    kind: Literal["policy_record"]
    payload: PolicyRecord


class DriverErrorEvent(Envelope):
    kind: Literal["driver_error"]
    payload: DriverError


class UnreadableEvent(Envelope):
    kind: Literal["unreadable"]
    payload: Unreadable


RunEvent = Annotated[
    SeedImportedEvent
    | RunCreatedEvent
    | RunPausedEvent
    | RunRunningEvent
    | RunCancelledEvent
    | RunCompletedEvent
    | StepOpenedEvent
    | CrossoverOpenedEvent
    | ChildCreatedEvent
    | StepRejectedEvent
    | EvaluationDoneEvent
    | AgentAdmittedEvent
    | AgentRejectedEvent
    | AgentRescoredEvent
    | StageStoppedEvent
    | EpochStartedEvent
    | IslandMigrationEvent
    | ExperienceUpdatedEvent
    | HeldoutStartedEvent
    | HeldoutFinishedEvent
    | CheckpointReachedEvent
    | CheckpointScoredEvent
    | PolicyRecordEvent
    | DriverErrorEvent
    | UnreadableEvent,
    Field(discriminator="kind"),
]

UNREADABLE = "unreadable"


def event_models() -> tuple[type[Envelope], ...]:
    """The union's members, in its order."""
    members: tuple[type[Envelope], ...] = get_args(get_args(RunEvent)[0])
    return members


def kind_of_model(model: type[Envelope]) -> str:
    kind: str = get_args(model.model_fields["kind"].annotation)[0]
    return kind


def payload_model(model: type[Envelope]) -> type[Payload]:
    payload = model.model_fields["payload"].annotation
    assert isinstance(payload, type) and issubclass(payload, Payload)
    return payload


def event_kinds() -> tuple[str, ...]:
    """Every kind a feed may carry, `unreadable` included."""
    return tuple(kind_of_model(model) for model in event_models())


def payload_model_of(kind: str) -> type[Payload] | None:
    """The payload model of `kind`; None for a kind the union lacks."""
    return next((payload_model(m) for m in event_models() if kind_of_model(m) == kind), None)


def _kinds_by_payload() -> dict[type[Payload], str]:
    kinds = {payload_model(model): kind_of_model(model) for model in event_models()}
    assert len(kinds) == len(event_models()), "each kind has a payload model of its own"
    return kinds


KIND_OF_PAYLOAD = _kinds_by_payload()


def kind_of(payload: Payload | type[Payload]) -> str:
    """The kind whose payload this is, or whose payload model this is (one model per kind)."""
    model = payload if isinstance(payload, type) else type(payload)
    try:
        return KIND_OF_PAYLOAD[model]
    except KeyError:
        raise TypeError(f"{model.__name__} is not the payload model of a run event kind") from None
