"""Runs: creation from a validated configuration, pause/resume/cancel, and winding down."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from contracts.config import ConfigFieldError, RunConfig
from contracts.errors import NotFoundError
from contracts.events import RunCancelled, RunCompleted, RunCreated, RunPaused, RunRunning
from service import events, leases, lifecycle
from service.db.locks import locked
from service.db.models import Agent, Evaluation, Run, RunAgent, Step
from service.lifecycle import EvaluationStatus, MemberStatus, RunStatus, Transition
from service.plan import RunPlan


class UnknownAgentError(NotFoundError):
    """A configuration names an agent the archive does not hold; `field` is its path."""

    def __init__(self, field: str, agent_id: str) -> None:
        super().__init__(f"{field}: unknown agent {agent_id}")
        self.field = field
        self.message = f"unknown agent {agent_id}"


def new_id() -> str:
    return uuid.uuid4().hex[:16]


def require_agents(session: Session, *, config: RunConfig) -> None:
    """The agents a configuration names are archived, or UnknownAgentError at the field; a hyper
    run's seed carries its own improvement procedure, or ConfigFieldError."""
    seed = session.get(Agent, config.seed_agent)
    if seed is None:
        raise UnknownAgentError("seed_agent", config.seed_agent)
    if config.improver.mode == "hyper" and not seed.manifest.get("improve"):
        raise ConfigFieldError(
            "improver.mode",
            "improver mode 'hyper' needs a seed agent whose agent.toml declares an `improve` command",
        )
    if config.improver.agent is not None and session.get(Agent, config.improver.agent) is None:
        raise UnknownAgentError("improver.agent", config.improver.agent)


def create_run(session: Session, *, plan: RunPlan) -> Run:
    """A new running run whose archive holds its seed, stored from a plan (`service.plan.plan_run`
    validated its configuration). The caller commits."""
    config = plan.config
    require_agents(session, config=config)
    now = datetime.now(UTC)
    run = Run(
        id=new_id(),
        name=config.name,
        config=config.model_dump(mode="json"),
        stage_tasks=plan.stage_tasks,
        seed_agent_id=config.seed_agent,
        created_at=now,
        started_at=now,
        resumed_at=now,
    )
    lifecycle.start_run(run)
    session.add(run)
    session.flush()
    seed = RunAgent(run_id=run.id, agent_id=config.seed_agent, step_number=0)
    lifecycle.join_run(seed)
    session.add(seed)
    events.emit(session, RunCreated(name=config.name), run_id=run.id)
    return run


def change_state(session: Session, *, run_id: str, action: str) -> Run:
    """Pause, resume or cancel; an impossible change is a ConflictError. The caller commits."""
    run = locked(session, Run, run_id)
    if run is None:
        raise NotFoundError(f"run {run_id} not found")
    transition = lifecycle.RUN_ACTIONS[action]
    if transition.target in lifecycle.RUN_FINISHED:
        wind_down(session, run=run, end=transition, reason=f"{action} requested")
        return run
    now = datetime.now(UTC)
    was_running = run.status == RunStatus.RUNNING
    transition(run)
    if was_running:
        bank_active_time(run, now)
    if run.status == RunStatus.RUNNING:
        run.resumed_at = now
    changed = RunPaused(action="pause") if run.status == RunStatus.PAUSED else RunRunning(action="resume")
    events.emit(session, changed, run_id=run_id)
    return run


def bank_active_time(run: Run, now: datetime) -> None:
    """Add the running time since the last resume to the run's active seconds."""
    if run.resumed_at is not None:
        run.active_seconds += max(0.0, (now - run.resumed_at).total_seconds())
    run.resumed_at = None


def elapsed_seconds(run: Run, now: datetime | None = None) -> float:
    now = now or datetime.now(UTC)
    total = run.active_seconds
    if run.status == RunStatus.RUNNING and run.resumed_at is not None:
        total += max(0.0, (now - run.resumed_at).total_seconds())
    return total


def complete(session: Session, *, run: Run, reason: str) -> None:
    """The driver ends a run: its budget is spent, or its work is done."""
    wind_down(session, run=run, end=lifecycle.complete_run, reason=reason)


def wind_down(session: Session, *, run: Run, end: Transition[Run], reason: str) -> None:
    """Finish a run: work still in flight is cancelled and agents still being scored are rejected."""
    now = datetime.now(UTC)
    was_running = run.status == RunStatus.RUNNING
    end(run)
    if was_running:
        bank_active_time(run, now)
    run.stop_reason, run.finished_at = reason, now
    # FOR UPDATE: on PostgreSQL a worker's answer committed meanwhile is waited for and its row
    # skipped, not overwritten (SQLite: the caller's lock on the run holds the whole database).
    for step in session.scalars(
        select(Step).where(Step.run_id == run.id, Step.status.in_(lifecycle.STEP_IN_FLIGHT)).with_for_update()
    ):
        lifecycle.cancel_step(step)
        step.reason, step.finished_at = reason, now
    for evaluation in session.scalars(
        select(Evaluation)
        .where(Evaluation.run_id == run.id, Evaluation.status == EvaluationStatus.PENDING)
        .with_for_update()
    ):
        lifecycle.cancel_evaluation(evaluation)
    for member in session.scalars(
        select(RunAgent)
        .where(RunAgent.run_id == run.id, RunAgent.status == MemberStatus.EVALUATING)
        .with_for_update()
    ):
        lifecycle.reject_member(member)
        member.reason = f"run ended before its evaluation finished: {reason}"
    leases.expire_run(session, run_id=run.id)
    ended = RunCompleted(reason=reason) if run.status == RunStatus.COMPLETED else RunCancelled(reason=reason)
    events.emit(session, ended, run_id=run.id)
