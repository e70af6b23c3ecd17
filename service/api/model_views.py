"""Answers about models: each step's choice and usage per model, and an agent's transfer table."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from contracts.config import model_chain
from contracts.errors import NotFoundError
from contracts.scores import fraction, interval
from service import queries
from service.api.model_schemas import (
    AgentTransfer,
    ModelChoicePublic,
    ModelUsage,
    StepPublic,
    TransferRow,
)
from service.db.models import LLMUsage, Run, RunAgent, Step
from service.lifecycle import RUN_FINISHED


def run_steps(session: Session, *, run_id: str, limit: int, offset: int) -> tuple[list[StepPublic], int]:
    """The run's steps in order, each with its improve model choice and its calls per model."""
    queries.get_run(session, run_id=run_id)
    total = session.scalar(select(func.count()).select_from(Step).where(Step.run_id == run_id)) or 0
    steps = session.scalars(
        select(Step).where(Step.run_id == run_id).order_by(Step.number).limit(limit).offset(offset)
    ).all()
    usage: dict[str, list[LLMUsage]] = defaultdict(list)
    if steps:
        rows = session.scalars(
            select(LLMUsage)
            .where(LLMUsage.run_id == run_id, LLMUsage.step_id.in_([s.id for s in steps]))
            .order_by(LLMUsage.created_at, LLMUsage.id)
        ).all()
        for row in rows:
            usage[str(row.step_id)].append(row)
    return [_step_public(step, usage[step.id]) for step in steps], total


def _step_public(step: Step, calls: list[LLMUsage]) -> StepPublic:
    by_model: dict[tuple[str, str, str | None], ModelUsage] = {}
    for call in calls:
        route = call.record.get("route") if isinstance(call.record, dict) else None
        model = str(route["model"]) if isinstance(route, dict) else call.model
        role = str(route["why"]) if isinstance(route, dict) else None
        key = (call.purpose, model, role)
        entry = by_model.setdefault(
            key,
            ModelUsage(purpose=call.purpose, model=model, role=role, calls=0, errors=0, usd=0.0, tokens=0),
        )
        entry.calls += 1
        entry.errors += call.record.get("status") != "ok" if isinstance(call.record, dict) else 0
        entry.usd += call.cost_usd
        entry.tokens += call.prompt_tokens + call.completion_tokens
    return StepPublic(
        id=step.id,
        number=step.number,
        kind=step.kind,
        status=step.status,
        parent_id=step.parent_id,
        child_id=step.child_id,
        reason=step.reason,
        model_choice=None
        if step.model_choice is None
        else ModelChoicePublic.model_validate(step.model_choice),
        usage=list(by_model.values()),
        usd=sum(c.cost_usd for c in calls),
        tokens=sum(c.prompt_tokens + c.completion_tokens for c in calls),
    )


def agent_transfer(session: Session, *, agent_id: str, model: str | None = None) -> AgentTransfer:
    """The agent's results on each solving model, from the evaluation-only runs (`max_children:
    0`) that named it as their seed: pooled per (models, benchmark, task set)."""
    queries.get_agent(session, agent_id=agent_id)
    runs = session.scalars(
        select(Run).where(Run.seed_agent_id == agent_id).order_by(Run.created_at, Run.id)
    ).all()
    pooled: dict[tuple[tuple[str, ...], str, frozenset[str]], dict[str, Any]] = {}
    for run in runs:
        config = run.config
        if config.get("budget", {}).get("max_children") != 0:
            continue
        chain = model_chain(config.get("models", {}).get("solve", "scripted"))
        tasks = frozenset(task for stage in run.stage_tasks for task in stage)
        key = (chain, str(config.get("benchmark", {}).get("name", "")), tasks)
        entry = pooled.setdefault(
            key, {"runs": [], "running": 0, "resolved": 0, "total": 0, "usd": 0.0, "tokens": 0}
        )
        member = session.get(RunAgent, (run.id, agent_id))
        usd, tokens = queries.usage_totals(session, LLMUsage.run_id == run.id)
        entry["runs"].append(run.id)
        entry["running"] += run.status not in RUN_FINISHED
        entry["resolved"] += (member.resolved or 0) if member else 0
        entry["total"] += (member.attempted or 0) if member else 0
        entry["usd"] += usd
        entry["tokens"] += tokens
    rows = []
    for (chain, benchmark, tasks), entry in pooled.items():
        low, high = interval(entry["resolved"], entry["total"])
        rows.append(
            TransferRow(
                model=chain[0],
                fallbacks=list(chain[1:]),
                benchmark=benchmark,
                tasks=len(tasks),
                rate=fraction(entry["resolved"], entry["total"]),
                low=low,
                high=high,
                **entry,
            )
        )
    if model is not None:
        rows = [row for row in rows if row.model == model]
        if not rows:
            raise NotFoundError(f"model: no evaluation-only run of agent {agent_id} solved with {model!r}")
    rows.sort(key=lambda row: (row.rate is None, -(row.rate or 0.0), row.model))
    return AgentTransfer(agent_id=agent_id, rows=rows)
