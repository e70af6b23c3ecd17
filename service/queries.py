"""Read helpers shared by the API and the driver: keyword-only functions from a session to rows
and plain values. The API's answer shapes are built from them in `service.api.views`."""

from __future__ import annotations

from sqlalchemy import ColumnElement, func, or_, select
from sqlalchemy.orm import Session

from contracts.errors import NotFoundError
from contracts.scores import heldout_interval
from service.db.models import Agent, LLMUsage, Run, RunAgent
from service.lifecycle import MemberStatus


def get_run(session: Session, *, run_id: str) -> Run:
    run = session.get(Run, run_id)
    if run is None:
        raise NotFoundError(f"run {run_id} not found")
    return run


def get_agent(session: Session, *, agent_id: str) -> Agent:
    agent = session.get(Agent, agent_id)
    if agent is None:
        raise NotFoundError(f"agent {agent_id} not found")
    return agent


def usage_totals(session: Session, *where: ColumnElement[bool]) -> tuple[float, int]:
    """(USD, tokens) of the metered LLM calls matching `where`."""
    usd, tokens = session.execute(
        select(
            func.coalesce(func.sum(LLMUsage.cost_usd), 0.0),
            func.coalesce(func.sum(LLMUsage.prompt_tokens + LLMUsage.completion_tokens), 0),
        ).where(*where)
    ).one()
    return float(usd), int(tokens)


def top_agents(session: Session, *, run_id: str, k: int) -> list[str]:
    """The run's admitted agents, best first: those scored on held-out tasks by how many they
    ran (an agent stopped early in a held-out race comes after those that went on), then by their
    held-out Wilson lower bound (ties: selection score, then the earlier); then the rest by
    selection score."""
    admitted = [
        RunAgent.run_id == run_id,
        RunAgent.status == MemberStatus.ADMITTED,
        RunAgent.score.is_not(None),
    ]
    heldout = sorted(
        session.scalars(select(RunAgent).where(*admitted, RunAgent.heldout_total > 0)).all(),
        key=lambda m: (
            -(m.heldout_total or 0),
            -(heldout_interval(m)[0] or 0.0),
            -(m.score or 0.0),
            m.created_at,
            m.agent_id,
        ),
    )
    rest = session.scalars(
        select(RunAgent.agent_id)
        .where(*admitted, or_(RunAgent.heldout_total.is_(None), RunAgent.heldout_total == 0))
        .order_by(RunAgent.epoch.desc(), RunAgent.score.desc(), RunAgent.created_at)  # the newest utility's
        .limit(max(0, k - len(heldout)))
    ).all()
    return [m.agent_id for m in heldout][:k] + list(rest)


def lineage_ids(session: Session, *, agent_id: str) -> list[str]:
    """Seed first, this agent last."""
    chain: list[str] = []
    current: str | None = agent_id
    while current is not None:
        chain.append(current)
        current = session.scalar(select(Agent.parent_id).where(Agent.id == current))
    return list(reversed(chain))
