"""SQLAlchemy 2 models: runs, agents, run membership, steps, evaluations, LLM usage, leases, events.

Git holds the agents' code; these tables hold everything else. An agent row is
written only after its git objects exist (see `service.archive.store`). Status columns
hold the values of `service.lifecycle`'s enums and are written only through it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from contracts.vocabulary import EvaluationPurpose, StepKind

SHA = String(40)
ID = String(32)


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(moment: datetime) -> datetime:
    """`moment` in UTC; a naive one is taken as UTC already (as SQLite hands back what was written in UTC)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """A moment stored in UTC and read back in UTC, with its offset, on every database.

    SQLite keeps no zone: it stores what it is given as it reads on a UTC clock, and hands it
    back naive; PostgreSQL's `timestamptz` answers in the connection's zone. Both come back
    as aware UTC times here, so every time in an answer carries `+00:00`. The column type
    is unchanged (`DateTime(timezone=True)`), so no migration.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"a naive time cannot be stored (which zone is {value.isoformat()} in?)")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else as_utc(value)


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, datetime: UTCDateTime()}


class Run(Base):
    __tablename__ = "runs"

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    config: Mapped[dict[str, Any]]
    # Task ids of each stage, fixed when the run is created (recorded with the run).
    stage_tasks: Mapped[list[list[str]]] = mapped_column(JSON, default=list)
    status: Mapped[str] = mapped_column(String(16), index=True)  # lifecycle.RunStatus
    stop_reason: Mapped[str | None] = mapped_column(Text)
    seed_agent_id: Mapped[str] = mapped_column(SHA, ForeignKey("agents.id"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    # Wall time only counts while the run is running, so pauses do not spend the budget.
    active_seconds: Mapped[float] = mapped_column(Float, default=0.0)
    resumed_at: Mapped[datetime | None]
    # The utility version now in force (issue 12 epochs): selection reads this epoch's scores only.
    epoch: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class Agent(Base):
    """One commit of the archive. Seeds have no parent and no run."""

    __tablename__ = "agents"

    id: Mapped[str] = mapped_column(SHA, primary_key=True)
    parent_id: Mapped[str | None] = mapped_column(SHA, ForeignKey("agents.id"), index=True)
    kind: Mapped[str] = mapped_column(String(8))  # "seed" | "child"
    name: Mapped[str | None] = mapped_column(String(200))
    tree_id: Mapped[str] = mapped_column(SHA, index=True)
    # No foreign key: runs reference their seed agent, and the cycle would break table creation.
    run_id: Mapped[str | None] = mapped_column(ID, index=True)
    step_id: Mapped[str | None] = mapped_column(ID)
    manifest: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    # A crossover child is a merge commit: its other parent (the first is `parent_id`).
    second_parent_id: Mapped[str | None] = mapped_column(SHA, ForeignKey("agents.id"))
    # Hyperagent mode: whether the child's diff changed its own improvement procedure.
    meta_changed: Mapped[bool | None] = mapped_column(Boolean)


class RunAgent(Base):
    """An agent's place in one run's archive: its status, score and child count there."""

    __tablename__ = "run_agents"

    run_id: Mapped[str] = mapped_column(ID, ForeignKey("runs.id"), primary_key=True)
    agent_id: Mapped[str] = mapped_column(SHA, ForeignKey("agents.id"), primary_key=True)
    parent_id: Mapped[str | None] = mapped_column(SHA)
    status: Mapped[str] = mapped_column(String(16))  # lifecycle.MemberStatus
    reason: Mapped[str | None] = mapped_column(Text)
    score: Mapped[float | None] = mapped_column(Float)
    stage_reached: Mapped[int] = mapped_column(Integer, default=0)
    children: Mapped[int] = mapped_column(Integer, default=0)
    step_number: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    second_parent_id: Mapped[str | None] = mapped_column(SHA)  # a crossover child's other parent
    # `score` is resolved / attempted over the selection evaluations of `epoch` (trials included).
    resolved: Mapped[int | None] = mapped_column(Integer)
    attempted: Mapped[int | None] = mapped_column(Integer)
    epoch: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # Re-evaluation at the end of the run on tasks that never influenced selection.
    heldout_resolved: Mapped[int | None] = mapped_column(Integer)
    heldout_total: Mapped[int | None] = mapped_column(Integer)
    # How many of the run's agents have a held-out score, this one included: the pick compares
    # them all (None: 1; contracts.scores.heldout_interval).
    heldout_compared: Mapped[int | None] = mapped_column(Integer)
    island: Mapped[int | None] = mapped_column(Integer)  # islands strategy
    niche: Mapped[str | None] = mapped_column(String(200))  # MAP-Elites behaviour descriptor
    group_id: Mapped[str | None] = mapped_column(String(64))  # group evolution: its step's group
    same_as: Mapped[str | None] = mapped_column(SHA)  # an agent with the same tree, whose results it reuses
    meta_changed: Mapped[bool | None] = mapped_column(Boolean)  # copied from the agent for the lineage
    # The racing evaluation policy: why its last stage's measurement stopped (contracts.vocabulary.StageStop).
    race_stop: Mapped[str | None] = mapped_column(String(32))

    __table_args__ = (Index("ix_run_agents_run_status", "run_id", "status"),)


class StageScore(Base):
    __tablename__ = "stage_scores"

    run_id: Mapped[str] = mapped_column(ID, ForeignKey("runs.id"), primary_key=True)
    agent_id: Mapped[str] = mapped_column(SHA, ForeignKey("agents.id"), primary_key=True)
    stage: Mapped[int] = mapped_column(Integer, primary_key=True)
    epoch: Mapped[int] = mapped_column(Integer, primary_key=True, default=0, server_default="0")
    resolved: Mapped[int] = mapped_column(Integer)
    total: Mapped[int] = mapped_column(Integer)
    threshold: Mapped[float] = mapped_column(Float)
    passed: Mapped[bool] = mapped_column(Boolean)
    stop: Mapped[str | None] = mapped_column(String(32))  # racing: why the stage stopped (StageStop)


class Step(Base):
    """One attempt at a child, recorded whether it succeeds or not."""

    __tablename__ = "steps"

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    run_id: Mapped[str] = mapped_column(ID, ForeignKey("runs.id"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    parent_id: Mapped[str] = mapped_column(SHA, ForeignKey("agents.id"))
    child_id: Mapped[str | None] = mapped_column(SHA, ForeignKey("agents.id"))
    status: Mapped[str] = mapped_column(String(16), index=True)  # lifecycle.StepStatus
    reason: Mapped[str | None] = mapped_column(Text)
    diagnosis: Mapped[str | None] = mapped_column(Text)
    dispatched_at: Mapped[datetime | None]
    dispatches: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
    finished_at: Mapped[datetime | None]
    # contracts.vocabulary.StepKind: improve (one parent), crossover (a merge of parent_id and
    # second_parent_id), hyper (the parent's own improvement procedure).
    kind: Mapped[str] = mapped_column(
        String(16), default=StepKind.IMPROVE, server_default=StepKind.IMPROVE.value
    )
    second_parent_id: Mapped[str | None] = mapped_column(SHA)
    group_id: Mapped[str | None] = mapped_column(String(64))
    # The job's secret (sha256 of the one in the last dispatched message) and the worker token
    # that submitted the child or the rejection (service.job_secrets, service.worker_tokens).
    job_secret_hash: Mapped[str | None] = mapped_column(String(64))
    worker_token_id: Mapped[str | None] = mapped_column(String(32))
    worker_name: Mapped[str | None] = mapped_column(String(200))
    # The improve model its job was sent with and why (service/driver/model_choice.py), fixed at
    # the first dispatch: {"model", "why": "first" | "bandit", "fallbacks", "arms"?}.
    model_choice: Mapped[dict[str, Any] | None] = mapped_column(JSON)

    __table_args__ = (UniqueConstraint("run_id", "number", name="uq_steps_run_number"),)


class Evaluation(Base):
    """One (agent, task) pair within a run."""

    __tablename__ = "evaluations"

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    run_id: Mapped[str] = mapped_column(ID, ForeignKey("runs.id"))
    agent_id: Mapped[str] = mapped_column(SHA, ForeignKey("agents.id"))
    task_id: Mapped[str] = mapped_column(String(200))
    stage: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), index=True)  # lifecycle.EvaluationStatus
    resolved: Mapped[bool | None] = mapped_column(Boolean)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    cost_usd: Mapped[float] = mapped_column(Float, default=0.0)
    dispatched_at: Mapped[datetime | None]
    dispatches: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    finished_at: Mapped[datetime | None]
    trial: Mapped[int] = mapped_column(Integer, default=0, server_default="0")  # `trials: k` repeats
    epoch: Mapped[int] = mapped_column(Integer, default=0, server_default="0")  # utility version
    # contracts.vocabulary.EvaluationPurpose: selection (stages), heldout (end-of-run re-evaluation),
    # rescore (epoch change).
    purpose: Mapped[str] = mapped_column(
        String(16), default=EvaluationPurpose.SELECTION, server_default=EvaluationPurpose.SELECTION.value
    )
    # Reuse: sha256 of (agent tree, task, benchmark version, solve model and settings, trial),
    # and the evaluation whose result this one copied instead of running.
    reuse_key: Mapped[str | None] = mapped_column(String(64), index=True)
    reused_from: Mapped[str | None] = mapped_column(ID)
    # As on steps: the dispatched job's secret, hashed, and the worker token that answered.
    job_secret_hash: Mapped[str | None] = mapped_column(String(64))
    worker_token_id: Mapped[str | None] = mapped_column(String(32))
    worker_name: Mapped[str | None] = mapped_column(String(200))

    @property
    def tampered(self) -> bool:
        """Whether grading found this evaluation's results forged (see EvaluationResult)."""
        return bool((self.result or {}).get("tampered"))

    @property
    def dropped_for_grading(self) -> list[str]:
        """Paths of the agent's diff that grading left out as test infrastructure."""
        return list((self.result or {}).get("dropped_for_grading") or {})

    __table_args__ = (
        UniqueConstraint(
            "run_id", "agent_id", "task_id", "epoch", "trial", name="uq_evaluations_run_agent_task"
        ),
        Index("ix_evaluations_run_agent", "run_id", "agent_id"),
    )


class LLMUsage(Base):
    __tablename__ = "llm_usage"

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    run_id: Mapped[str | None] = mapped_column(ID, ForeignKey("runs.id"), index=True)
    step_id: Mapped[str | None] = mapped_column(ID)
    evaluation_id: Mapped[str | None] = mapped_column(ID)
    agent_id: Mapped[str | None] = mapped_column(SHA)
    purpose: Mapped[str] = mapped_column(String(32))
    model: Mapped[str] = mapped_column(String(200))
    prompt_tokens: Mapped[int] = mapped_column(Integer)
    completion_tokens: Mapped[int] = mapped_column(Integer)
    cost_usd: Mapped[float] = mapped_column(Float)
    record: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Lease(Base):
    """Money and tokens reserved from a run's budget for one dispatch of a job (see `service.leases`).

    Outstanding while `settled_at` is empty; settled with what the job spent when its result is
    recorded, or expired (nothing spent is known) when the job is sent again, given up or its run ends.
    """

    __tablename__ = "leases"

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    run_id: Mapped[str] = mapped_column(ID, ForeignKey("runs.id"))
    step_id: Mapped[str | None] = mapped_column(ID, index=True)
    evaluation_id: Mapped[str | None] = mapped_column(ID, index=True)
    usd_reserved: Mapped[float | None] = mapped_column(Float)  # None: the run has no money budget
    tokens_reserved: Mapped[int | None] = mapped_column(Integer)
    usd_spent: Mapped[float | None] = mapped_column(Float)
    tokens_spent: Mapped[int | None] = mapped_column(Integer)
    outcome: Mapped[str | None] = mapped_column(String(16))  # None while outstanding; settled | expired
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    settled_at: Mapped[datetime | None]

    __table_args__ = (Index("ix_leases_run_settled", "run_id", "settled_at"),)


class Event(Base):
    """An append-only feed for `clade run watch` and the live dashboard."""

    __tablename__ = "events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str | None] = mapped_column(ID, ForeignKey("runs.id"), index=True)
    kind: Mapped[str] = mapped_column(String(32))
    payload: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class WorkerToken(Base):
    """A token the admin issued to one worker machine: only its sha256 is kept. Revoked tokens
    stay listed (results name them) but are refused at once."""

    __tablename__ = "worker_tokens"

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    revoked_at: Mapped[datetime | None]
