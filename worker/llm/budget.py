"""Budgets of one gateway: the evaluation's own limits and what the run has left.

A call is refused once a limit is reached; the call that crosses a limit is
let through and metered (its size is unknown until the upstream answers), so
spending can overshoot by the calls already in flight, never by later ones.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

# A job's budget, as the driver sent it, is the gateway's budget.
from contracts.jobs import Budget as Budget


@dataclass(frozen=True)
class BudgetRefusal:
    code: str  # evaluation_usd | evaluation_tokens | run_usd | run_tokens
    message: str


class BudgetMeter:
    """Thread-safe running totals of one gateway, checked against its `Budget`."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self._lock = threading.Lock()
        self._usd = 0.0
        self._tokens = 0

    @property
    def spent(self) -> tuple[float, int]:
        with self._lock:
            return self._usd, self._tokens

    def add(self, usd: float, tokens: int) -> None:
        with self._lock:
            self._usd += usd
            self._tokens += tokens

    def check(self) -> BudgetRefusal | None:
        """Why a new call must be refused, or None if it may go ahead."""
        b = self.budget
        usd, tokens = self.spent
        if b.evaluation_usd is not None and usd >= b.evaluation_usd:
            return BudgetRefusal(
                "evaluation_usd",
                f"per-evaluation budget exhausted: spent ${usd:.6f} of ${b.evaluation_usd:.6f}",
            )
        if b.evaluation_tokens is not None and tokens >= b.evaluation_tokens:
            return BudgetRefusal(
                "evaluation_tokens",
                f"per-evaluation token budget exhausted: used {tokens} of {b.evaluation_tokens} tokens",
            )
        if b.run_remaining_usd is not None and usd >= b.run_remaining_usd:
            return BudgetRefusal(
                "run_usd",
                f"run budget exhausted: this evaluation spent ${usd:.6f} and the run had"
                f" ${b.run_remaining_usd:.6f} left",
            )
        if b.run_remaining_tokens is not None and tokens >= b.run_remaining_tokens:
            return BudgetRefusal(
                "run_tokens",
                f"run token budget exhausted: this evaluation used {tokens} tokens and the run"
                f" had {b.run_remaining_tokens} left",
            )
        return None
