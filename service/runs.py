"""Run lifecycle: creation from a validated configuration and the allowed state changes."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from contracts.config import RunConfig
from contracts.errors import ConflictError, NotFoundError
from service.db.models import Agent, Evaluation, Event, Run, RunAgent, Step, as_utc

ACTIVE = ("running", "paused")
FINISHED = ("completed", "cancelled", "failed")
IN_FLIGHT_STEP = ("pending", "improving", "evaluating")

# action -> (states it may start from, state it leads to)
TRANSITIONS: dict[str, tuple[tuple[str, ...], str]] = {
    "pause": (("running",), "paused"),
    "resume": (("paused",), "running"),
    "cancel": (("running", "paused"), "cancelled"),
}


class UnknownAgentError(NotFoundError):
    """A configuration names an agent the archive does not hold; `field` is its path."""

    def __init__(self, field: str, agent_id: str) -> None:
        super().__init__(f"{field}: unknown agent {agent_id}")
        self.field = field


def new_id() -> str:
    return uuid.uuid4().hex[:16]


def create_run(session: Session, *, config: RunConfig, stage_tasks: list[list[str]]) -> Run:
    """A new running run whose archive holds its seed. The caller commits."""
    if session.get(Agent, config.seed_agent) is None:
        raise UnknownAgentError("seed_agent", config.seed_agent)
    if config.improver.agent is not None and session.get(Agent, config.improver.agent) is None:
        raise UnknownAgentError("improver.agent", config.improver.agent)
    now = datetime.now(UTC)
    run = Run(
        id=new_id(),
        name=config.name,
        config=config.model_dump(mode="json"),
        stage_tasks=stage_tasks,
        status="running",
        seed_agent_id=config.seed_agent,
        created_at=now,
        started_at=now,
        resumed_at=now,
    )
    session.add(run)
    session.flush()
    session.add(RunAgent(run_id=run.id, agent_id=config.seed_agent, status="evaluating", step_number=0))
    session.add(Event(run_id=run.id, kind="run_created", payload={"name": config.name}))
    return run


def change_state(session: Session, *, run_id: str, action: str) -> Run:
    """Pause, resume or cancel; an impossible change is a ConflictError. The caller commits."""
    run = session.get(Run, run_id, with_for_update=True)
    if run is None:
        raise NotFoundError(f"run {run_id} not found")
    allowed_from, target = TRANSITIONS[action]
    if run.status not in allowed_from:
        raise ConflictError(f"cannot {action} run {run_id}: it is {run.status}")
    if target in FINISHED:
        wind_down(session, run=run, status=target, reason=f"{action} requested")
        return run
    now = datetime.now(UTC)
    if run.status == "running":
        bank_active_time(run, now)
    if target == "running":
        run.resumed_at = now
    run.status = target
    session.add(Event(run_id=run_id, kind=f"run_{target}", payload={"action": action}))
    return run


def bank_active_time(run: Run, now: datetime) -> None:
    """Add the running time since the last resume to the run's active seconds."""
    if run.resumed_at is not None:
        run.active_seconds += max(0.0, (now - as_utc(run.resumed_at)).total_seconds())
    run.resumed_at = None


def elapsed_seconds(run: Run, now: datetime | None = None) -> float:
    now = now or datetime.now(UTC)
    total = run.active_seconds
    if run.status == "running" and run.resumed_at is not None:
        total += max(0.0, (now - as_utc(run.resumed_at)).total_seconds())
    return total


def wind_down(session: Session, *, run: Run, status: str, reason: str) -> None:
    """Finish a run: work still in flight is cancelled and agents still being scored are rejected."""
    now = datetime.now(UTC)
    if run.status == "running":
        bank_active_time(run, now)
    run.status, run.stop_reason, run.finished_at = status, reason, now
    for step in session.scalars(select(Step).where(Step.run_id == run.id, Step.status.in_(IN_FLIGHT_STEP))):
        step.status, step.reason, step.finished_at = "cancelled", reason, now
    for evaluation in session.scalars(
        select(Evaluation).where(Evaluation.run_id == run.id, Evaluation.status == "pending")
    ):
        evaluation.status = "cancelled"
    for member in session.scalars(
        select(RunAgent).where(RunAgent.run_id == run.id, RunAgent.status == "evaluating")
    ):
        member.status, member.reason = "rejected", f"run ended before its evaluation finished: {reason}"
    session.add(Event(run_id=run.id, kind=f"run_{status}", payload={"reason": reason}))
