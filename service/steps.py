"""Opening steps: one attempt at a child of a chosen parent, numbered within its run."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from contracts.events import StepOpened
from contracts.vocabulary import StepKind
from service import events, lifecycle
from service.db.models import Agent, Step
from service.runs import new_id


def open_step(session: Session, *, run_id: str, parent_id: str, kind: StepKind = StepKind.IMPROVE) -> Step:
    """A new pending step; the caller commits (and then hands it to a worker)."""
    number = (session.scalar(select(func.max(Step.number)).where(Step.run_id == run_id)) or 0) + 1
    step = Step(id=new_id(), run_id=run_id, number=number, parent_id=parent_id, kind=kind)
    lifecycle.open_step(step)
    session.add(step)
    events.emit(session, StepOpened(step=number, parent_id=parent_id), run_id=run_id)
    return step


def improve_kind(session: Session, *, mode: str, parent_id: str) -> StepKind:
    """`hyper` when the run's improver mode is and the parent carries its own `improve` command;
    otherwise `improve` (Clade's diagnosis and improver, the fallback for a parent without one)."""
    if mode != "hyper":
        return StepKind.IMPROVE
    parent = session.get(Agent, parent_id)
    return StepKind.HYPER if parent is not None and parent.manifest.get("improve") else StepKind.IMPROVE
