"""Leases: money and tokens reserved from a run's budget for each job in flight.

Before the driver sends a job it reserves a slice of what the run has left (`service.driver.
budget.grant_lease` decides how much); the job carries that slice as its budget, and the
worker's LLM gateway refuses calls its lease cannot pay for. A lease is outstanding until:

    settled   the job's result is recorded: what it really spent is kept on the lease, and
              the rest of the reservation is free again
    expired   the job is sent again (the lost delivery's lease gives way to the new one), given
              up, or its run ends

So at any moment `spent (recorded usage) + outstanding reservations <= the run's budget`, and N
jobs in parallel can together spend no more than the run had left.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session

from contracts.records import UsageRecord
from service.db.models import Lease

SETTLED = "settled"
EXPIRED = "expired"


@dataclass(frozen=True)
class Reserved:
    """What a run's outstanding leases hold."""

    usd: float
    tokens: int
    leases: int


def outstanding(session: Session, *, run_id: str) -> Reserved:
    usd, tokens, count = session.execute(
        select(
            func.coalesce(func.sum(Lease.usd_reserved), 0.0),
            func.coalesce(func.sum(Lease.tokens_reserved), 0),
            func.count(),
        ).where(Lease.run_id == run_id, Lease.settled_at.is_(None))
    ).one()
    return Reserved(usd=float(usd or 0.0), tokens=int(tokens or 0), leases=int(count))


def grant(
    session: Session,
    *,
    run_id: str,
    usd: float | None,
    tokens: int | None,
    step_id: str | None = None,
    evaluation_id: str | None = None,
) -> Lease:
    """Record a reservation for one dispatch of a step's or an evaluation's job. Caller commits."""
    lease = Lease(
        id=uuid.uuid4().hex,
        run_id=run_id,
        step_id=step_id,
        evaluation_id=evaluation_id,
        usd_reserved=usd,
        tokens_reserved=tokens,
    )
    # No flush here: the next query flushes it (autoflush), and a tick's leases go in one batch.
    session.add(lease)
    return lease


def settle(
    session: Session,
    *,
    usage: list[UsageRecord],
    step_id: str | None = None,
    evaluation_id: str | None = None,
) -> None:
    """The job answered: its outstanding lease keeps what it spent; the rest is free again."""
    for lease in _open(session, step_id=step_id, evaluation_id=evaluation_id):
        lease.usd_spent = sum(call.cost_usd for call in usage)
        lease.tokens_spent = sum(call.prompt_tokens + call.completion_tokens for call in usage)
        _close(lease, SETTLED)


def expire(session: Session, *, step_id: str | None = None, evaluation_id: str | None = None) -> None:
    """The job was lost, given up or cancelled: its reservation ends without an answer."""
    for lease in _open(session, step_id=step_id, evaluation_id=evaluation_id):
        _close(lease, EXPIRED)


def expire_run(session: Session, *, run_id: str) -> None:
    """A run that ends holds nothing in reserve."""
    for lease in session.scalars(select(Lease).where(Lease.run_id == run_id, Lease.settled_at.is_(None))):
        _close(lease, EXPIRED)


def _open(session: Session, *, step_id: str | None, evaluation_id: str | None) -> list[Lease]:
    where: list[ColumnElement[bool]] = [Lease.settled_at.is_(None)]
    if step_id is not None:
        where.append(Lease.step_id == step_id)
    elif evaluation_id is not None:
        where.append(Lease.evaluation_id == evaluation_id)
    else:
        raise ValueError("a lease belongs to a step or an evaluation")
    return list(session.scalars(select(Lease).where(*where)))


def _close(lease: Lease, outcome: str) -> None:
    lease.outcome, lease.settled_at = outcome, datetime.now(UTC)
