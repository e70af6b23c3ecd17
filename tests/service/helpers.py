"""Test helpers that put the archive into the states the run driver would."""

from __future__ import annotations

from sqlalchemy import create_engine, func, select
from sqlalchemy.orm import Session

from service.db.models import Agent, Evaluation, LLMUsage, Run, RunAgent, Step
from service.steps import open_step


def open_step_in(database_url: str, *, run_id: str, parent_id: str) -> str:
    """Open a step the way the driver does (the driver itself comes with the evolution loop)."""
    engine = create_engine(database_url)
    with Session(engine) as session:
        step = open_step(session, run_id=run_id, parent_id=parent_id)
        session.commit()
        step_id = step.id
    engine.dispose()
    return step_id


def row_counts(database_url: str) -> dict[str, int]:
    engine = create_engine(database_url)
    with Session(engine) as session:
        counts = {
            model.__tablename__: session.scalar(select(func.count()).select_from(model)) or 0
            for model in (Agent, Run, RunAgent, Step, Evaluation, LLMUsage)
        }
    engine.dispose()
    return counts


def agent_ids(database_url: str) -> set[str]:
    engine = create_engine(database_url)
    with Session(engine) as session:
        ids = set(session.scalars(select(Agent.id)))
    engine.dispose()
    return ids
