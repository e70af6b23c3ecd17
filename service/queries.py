"""Read helpers shared by the API and the driver: keyword-only functions from a session to rows
and plain values. The API's answer shapes are built from them in `service.api.views`."""

from __future__ import annotations

from sqlalchemy import ColumnElement, func, or_, select
from sqlalchemy.orm import Session

from contracts.errors import NotFoundError
from contracts.family import Scored, family_estimates
from contracts.lineage import lineage_estimates
from contracts.scores import heldout_interval
from service.db.models import Agent, LLMUsage, Run, RunAgent
from service.lifecycle import MemberStatus
from service.plan import stored_plan


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
    held-out Wilson lower bound (ties: the seed if it was put in the race, then selection score,
    then the earlier); then the rest, the newest utility's first, the way the run reads
    selection results (`heldout.choose`): by selection score, or by an estimate pooling their
    relatives' results (`by_estimate`)."""
    admitted = [
        RunAgent.run_id == run_id,
        RunAgent.status == MemberStatus.ADMITTED,
        RunAgent.score.is_not(None),
    ]
    run = get_run(session, run_id=run_id)
    plan = stored_plan(run)
    # With the seed in the race (`heldout.include_seed`), a child must beat it, not tie with it.
    seed_first = plan.heldout is not None and plan.heldout.include_seed
    heldout = sorted(
        session.scalars(select(RunAgent).where(*admitted, RunAgent.heldout_total > 0)).all(),
        key=lambda m: (
            -(m.heldout_total or 0),
            -(heldout_interval(m)[0] or 0.0),
            not (seed_first and m.agent_id == run.seed_agent_id),
            -(m.score or 0.0),
            m.created_at,
            m.agent_id,
        ),
    )
    named = [m.agent_id for m in heldout][:k]
    wanted = max(0, k - len(named))
    rest_where = [*admitted, or_(RunAgent.heldout_total.is_(None), RunAgent.heldout_total == 0)]
    choose = plan.choose
    if choose != "score":
        rows = session.execute(select(RunAgent.agent_id, RunAgent.epoch).where(*rest_where))
        epoch = {agent_id: number for agent_id, number in rows}
        ranked = [
            agent_id for agent_id in by_estimate(session, run_id=run_id, choose=choose) if agent_id in epoch
        ]
        ranked.sort(key=lambda agent_id: -epoch[agent_id])  # stable: the newest utility's first
        return named + ranked[:wanted]
    rest = session.scalars(
        select(RunAgent.agent_id)
        .where(*rest_where)
        .order_by(RunAgent.epoch.desc(), RunAgent.score.desc(), RunAgent.created_at)  # the newest utility's
        .limit(wanted)
    ).all()
    return named + list(rest)


def by_estimate(session: Session, *, run_id: str, choose: str) -> list[str]:
    """The run's admitted, scored agents, best first by an estimate that pools their relatives'
    selection results: `family` (`contracts.family`) or `tree` (`contracts.lineage`); ties:
    selection score, then the earlier."""
    # Every measured member is family (a rejected one's results count too); the admitted are ranked.
    # Columns, not entities: the simulator names the best at every tick.
    measured = session.execute(
        select(
            RunAgent.agent_id,
            RunAgent.parent_id,
            RunAgent.resolved,
            RunAgent.attempted,
            RunAgent.status,
            RunAgent.score,
            RunAgent.created_at,
        ).where(RunAgent.run_id == run_id, RunAgent.attempted.is_not(None))
    ).all()
    members = [Scored(m.agent_id, m.parent_id, m.resolved or 0, m.attempted or 0) for m in measured]
    if choose == "tree":
        estimates = {agent_id: e.mean for agent_id, e in lineage_estimates(members).items()}
    elif choose == "family":
        estimates = family_estimates(members)
    else:
        raise ValueError(f"no estimate named {choose!r}: family or tree")
    ranked = [
        m
        for m in measured
        if m.status == MemberStatus.ADMITTED and m.score is not None and m.agent_id in estimates
    ]
    ranked.sort(key=lambda m: (-estimates[m.agent_id], -(m.score or 0.0), m.created_at, m.agent_id))
    return [m.agent_id for m in ranked]


def lineage_ids(session: Session, *, agent_id: str) -> list[str]:
    """Seed first, this agent last."""
    chain: list[str] = []
    current: str | None = agent_id
    while current is not None:
        chain.append(current)
        current = session.scalar(select(Agent.parent_id).where(Agent.id == current))
    return list(reversed(chain))
