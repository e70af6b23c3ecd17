"""What a run has spent and holds in reserve, whether a budget stops it, and each job's lease.

Slice policy (a lease is what one job may spend; see `service.leases`):

- the room is the run's budget less what it spent (recorded usage) and what its outstanding
  leases hold;
- the jobs sent in one tick each get an equal share of the room as it was at the tick's start:
  room / max(parallelism, jobs to send), capped for an evaluation by `per_evaluation_usd` and
  `per_evaluation_tokens`, and for any job at MAX_LEASE_TOKENS (what one job can report);
- a share is raised to the smallest lease worth granting, the run's costliest call so far (one
  call's worst case as the run has seen it) and never less than 1% of the budget, as long as the
  room holds it; when the room cannot hold that, the job is not sent;
- a run that has jobs it cannot send and nothing in flight completes: its budget is spent or
  reserved.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from contracts.config import BudgetConfig
from contracts.jobs import Budget
from contracts.records import MAX_TOTAL_TOKENS
from service import leases
from service.db.models import Evaluation, LLMUsage, Run, Step
from service.plan import RunPlan
from service.queries import usage_totals
from service.runs import elapsed_seconds


@dataclass(frozen=True)
class Spent:
    steps: int
    usd: float
    tokens: int
    seconds: float
    evaluations: int = 0  # task evaluations sent or to be sent, not copies of earlier results


def spent(session: Session, run: Run) -> Spent:
    usd, tokens = usage_totals(session, LLMUsage.run_id == run.id)
    steps = session.scalar(select(func.count()).select_from(Step).where(Step.run_id == run.id)) or 0
    evaluations = (
        session.scalar(
            select(func.count())
            .select_from(Evaluation)
            .where(Evaluation.run_id == run.id, Evaluation.reused_from.is_(None))
        )
        or 0
    )
    return Spent(steps=steps, usd=usd, tokens=tokens, seconds=elapsed_seconds(run), evaluations=evaluations)


def hard_stop(budget: BudgetConfig, used: Spent) -> str | None:
    """A spent money, token or time budget: the run stops now, in-flight work included."""
    if budget.max_usd is not None and used.usd >= budget.max_usd:
        return f"budget: max_usd reached (${used.usd:.4f} of ${budget.max_usd:.4f})"
    if budget.max_tokens is not None and used.tokens >= budget.max_tokens:
        return f"budget: max_tokens reached ({used.tokens} of {budget.max_tokens})"
    if budget.max_wall_time_s is not None and used.seconds >= budget.max_wall_time_s:
        return f"budget: max_wall_time_s reached ({used.seconds:.0f}s of {budget.max_wall_time_s:.0f}s)"
    return None


def children_exhausted(
    budget: BudgetConfig, used: Spent, *, reserved_evaluations: int = 0, reserved_usd: float = 0.0
) -> bool:
    """All children have been attempted, or the evaluations sent plus `reserved_evaluations` (the
    held-out phase's and the checkpoints') reach `max_evaluations`, or the money spent plus
    `reserved_usd` (those evaluations priced, `reserve_usd`) reaches `max_usd`: no new steps,
    but those in flight finish."""
    if (
        budget.max_evaluations is not None
        and used.evaluations + reserved_evaluations >= budget.max_evaluations
    ):
        return True
    if budget.max_usd is not None and reserved_usd > 0 and used.usd + reserved_usd >= budget.max_usd:
        return True
    return used.steps >= budget.max_children


def reserve_usd(session: Session, run: Run, plan: RunPlan, evaluations: int) -> float:
    """What `evaluations` kept back may cost, plus what the steps a stop leaves in flight may still
    spend (each slot: an improve job and its child's first stage), so that the work kept back is
    paid for when the steps stop. An evaluation is priced at `per_evaluation_usd` (the gateway's
    cap on one) if set, else at the run's costliest so far; a step at its costliest improve job.
    0 without `max_usd` or with nothing kept back."""
    limits = plan.budget
    if limits.max_usd is None or evaluations <= 0:
        return 0.0
    if limits.per_evaluation_usd is not None:
        per_evaluation = limits.per_evaluation_usd
    else:
        per_evaluation = float(
            session.scalar(
                select(func.coalesce(func.max(Evaluation.cost_usd), 0.0)).where(Evaluation.run_id == run.id)
            )
            or 0.0
        )
    per_step = (
        select(func.sum(LLMUsage.cost_usd).label("usd"))
        .where(LLMUsage.run_id == run.id, LLMUsage.step_id.is_not(None))
        .group_by(LLMUsage.step_id)
        .subquery()
    )
    per_improve = session.scalar(select(func.coalesce(func.max(per_step.c.usd), 0.0)))
    first_stage = len(plan.stages[0].task_ids) * plan.trials
    in_flight = plan.parallelism * (first_stage * per_evaluation + float(per_improve or 0.0))
    return evaluations * per_evaluation + in_flight


MIN_LEASE_FRACTION = 0.01
# A lease's tokens are kept in a 32-bit column (`leases.tokens_reserved`), as a job's recorded
# totals are: a job can report no more, so a larger share of a large `max_tokens` is not needed.
MAX_LEASE_TOKENS = MAX_TOTAL_TOKENS


@dataclass(frozen=True)
class Room:
    """What a new lease may take: the budget less spent and reserved (None: no limit of that kind),
    and the smallest lease worth granting."""

    usd: float | None
    tokens: int | None
    min_usd: float
    min_tokens: int

    def why_full(self) -> str | None:
        """Which budget has no room for a new lease, or None if one fits."""
        if self.usd is not None and (self.usd <= 0 or self.usd < self.min_usd):
            return "max_usd"
        if self.tokens is not None and (self.tokens <= 0 or self.tokens < self.min_tokens):
            return "max_tokens"
        return None


def room(session: Session, run: Run, budget: BudgetConfig, used: Spent) -> Room:
    reserved = leases.outstanding(session, run_id=run.id)
    costliest_usd, largest_tokens = session.execute(
        select(
            func.coalesce(func.max(LLMUsage.cost_usd), 0.0),
            func.coalesce(func.max(LLMUsage.prompt_tokens + LLMUsage.completion_tokens), 0),
        ).where(LLMUsage.run_id == run.id)
    ).one()
    return Room(
        usd=None if budget.max_usd is None else budget.max_usd - used.usd - reserved.usd,
        tokens=None if budget.max_tokens is None else budget.max_tokens - used.tokens - reserved.tokens,
        min_usd=max(float(costliest_usd), (budget.max_usd or 0.0) * MIN_LEASE_FRACTION),
        min_tokens=max(int(largest_tokens), int((budget.max_tokens or 0) * MIN_LEASE_FRACTION), 1),
    )


class LeaseSlicer:
    """Hands out the leases of one tick's jobs, each an equal share of the room (module docstring)."""

    def __init__(self, budget: BudgetConfig, room: Room, *, jobs: int, parallelism: int) -> None:
        self.budget = budget
        self.room = room
        ways = max(parallelism, jobs, 1)
        self._share_usd = None if room.usd is None else room.usd / ways
        self._share_tokens = None if room.tokens is None else room.tokens // ways
        self.starved = False  # some job could not be sent for want of room

    def next(self, *, evaluation: bool) -> Budget | None:
        """The next job's budget, its lease taken from the room; None if the room cannot hold one."""
        room = self.room
        if room.why_full() is not None:
            self.starved = True
            return None
        usd = tokens = None
        if room.usd is not None and self._share_usd is not None:
            cap = self.budget.per_evaluation_usd if evaluation else None
            usd = min(max(self._share_usd, room.min_usd), cap or room.usd, room.usd)
        if room.tokens is not None and self._share_tokens is not None:
            cap_tokens = self.budget.per_evaluation_tokens if evaluation else None
            share = max(self._share_tokens, room.min_tokens)
            tokens = min(share, cap_tokens or room.tokens, room.tokens, MAX_LEASE_TOKENS)
        self.room = Room(
            usd=None if room.usd is None or usd is None else room.usd - usd,
            tokens=None if room.tokens is None or tokens is None else room.tokens - tokens,
            min_usd=room.min_usd,
            min_tokens=room.min_tokens,
        )
        return Budget(
            run_remaining_usd=usd,
            run_remaining_tokens=tokens,
            evaluation_usd=self.budget.per_evaluation_usd if evaluation else None,
            evaluation_tokens=self.budget.per_evaluation_tokens if evaluation else None,
            reply_tokens=self.budget.max_reply_tokens,
        )


def starved_reason(budget: BudgetConfig, used: Spent, room: Room) -> str:
    """Why a run whose jobs cannot start, with nothing in flight, completes."""
    if room.why_full() == "max_tokens":
        return (
            f"budget: max_tokens spent or reserved ({used.tokens} of {budget.max_tokens} used;"
            f" no room for another job)"
        )
    return (
        f"budget: max_usd spent or reserved (${used.usd:.4f} of ${budget.max_usd or 0:.4f} spent;"
        f" no room for another job)"
    )
