"""What a run has spent, and whether a budget stops it."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from contracts.config import BudgetConfig
from contracts.jobs import Budget
from service.db.models import LLMUsage, Run, Step
from service.queries import usage_totals
from service.runs import elapsed_seconds


@dataclass(frozen=True)
class Spent:
    steps: int
    usd: float
    tokens: int
    seconds: float


def spent(session: Session, run: Run) -> Spent:
    usd, tokens = usage_totals(session, LLMUsage.run_id == run.id)
    steps = session.scalar(select(func.count()).select_from(Step).where(Step.run_id == run.id)) or 0
    return Spent(steps=steps, usd=usd, tokens=tokens, seconds=elapsed_seconds(run))


def hard_stop(budget: BudgetConfig, used: Spent) -> str | None:
    """A spent money, token or time budget: the run stops now, in-flight work included."""
    if budget.max_usd is not None and used.usd >= budget.max_usd:
        return f"budget: max_usd reached (${used.usd:.4f} of ${budget.max_usd:.4f})"
    if budget.max_tokens is not None and used.tokens >= budget.max_tokens:
        return f"budget: max_tokens reached ({used.tokens} of {budget.max_tokens})"
    if budget.max_wall_time_s is not None and used.seconds >= budget.max_wall_time_s:
        return f"budget: max_wall_time_s reached ({used.seconds:.0f}s of {budget.max_wall_time_s:.0f}s)"
    return None


def children_exhausted(budget: BudgetConfig, used: Spent) -> bool:
    """All children have been attempted: no new steps, but those in flight finish."""
    return used.steps >= budget.max_children


def job_budget(budget: BudgetConfig, used: Spent, *, evaluation: bool) -> Budget:
    """What a job may spend: what the run has left, and for an evaluation its own limits."""
    return Budget(
        run_remaining_usd=None if budget.max_usd is None else max(0.0, budget.max_usd - used.usd),
        run_remaining_tokens=None if budget.max_tokens is None else max(0, budget.max_tokens - used.tokens),
        evaluation_usd=budget.per_evaluation_usd if evaluation else None,
        evaluation_tokens=budget.per_evaluation_tokens if evaluation else None,
    )
