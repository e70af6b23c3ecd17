"""Budgets of one gateway: the evaluation's own limits, and the job's lease on the run's budget.

Per-evaluation limits: a call is refused once a limit is reached; the call that crosses it
is let through and metered (its size is unknown until the upstream answers).

The lease (`Budget.run_remaining_*`, reserved for this job by the driver) is never crossed
by more than a misjudged prompt: before a call goes upstream, its worst case is held against
the lease, the prompt's tokens estimated from the request and the reply's bounded by
`max_tokens`, times `n` replies. When the lease cannot pay for the agent's own `max_tokens` (or,
when it set none, for UNCAPPED_REPLY_TOKENS, which the request then carries), the request goes
upstream with the `max_tokens` it can pay for;
when it cannot pay for MIN_REPLY_TOKENS of reply, the call is refused. Calls in flight at once
each hold their worst case, so they cannot cross the lease together either. Together with the
driver's leases this keeps a run's spend within its budget however many jobs run at once.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

# A job's budget, as the driver sent it, is the gateway's budget.
from contracts.jobs import Budget as Budget
from worker.llm.pricing import PER_MILLION, ModelPrice

MIN_REPLY_TOKENS = 16  # a lease that cannot pay for this much reply refuses the call
UNCAPPED_REPLY_TOKENS = 32_768  # the reply a call without max_tokens is taken to stay within


@dataclass(frozen=True)
class BudgetRefusal:
    code: str  # evaluation_usd | evaluation_tokens | run_usd | run_tokens
    message: str


@dataclass(frozen=True)
class Hold:
    """One call's worst case, held against the lease while it is in flight."""

    usd: float
    tokens: int
    reply_cap: int | None  # the max_tokens the request must carry; None: leave it as the agent sent it


NO_HOLD = Hold(0.0, 0, None)


class BudgetMeter:
    """Thread-safe running totals of one gateway, checked against its `Budget`."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self._lock = threading.Lock()
        self._usd = 0.0
        self._tokens = 0
        self._held_usd = 0.0
        self._held_tokens = 0

    @property
    def spent(self) -> tuple[float, int]:
        with self._lock:
            return self._usd, self._tokens

    def add(self, usd: float, tokens: int) -> None:
        with self._lock:
            self._usd += usd
            self._tokens += tokens

    def reply_limit(self, asked: int | None) -> int | None:
        """The reply limit a request goes upstream with: the agent's, lowered to the run's
        `max_reply_tokens` (given it when it set none)."""
        cap = self.budget.reply_tokens
        return asked if cap is None else min(asked or cap, cap)

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
                f"run budget exhausted: this job spent ${usd:.6f} of the ${b.run_remaining_usd:.6f}"
                f" it was leased of the run's budget",
            )
        if b.run_remaining_tokens is not None and tokens >= b.run_remaining_tokens:
            return BudgetRefusal(
                "run_tokens",
                f"run token budget exhausted: this job used {tokens} of the {b.run_remaining_tokens}"
                f" tokens it was leased of the run's budget",
            )
        return None

    def hold(
        self,
        *,
        prompt_tokens: int,
        reply_tokens: int | None,
        price: ModelPrice | None,
        choices: int = 1,
    ) -> Hold | BudgetRefusal:
        """Hold a call's worst case against the lease: `prompt_tokens` as estimated, `choices`
        replies (the request's `n`) of at most `reply_tokens` each (the agent's largest reply
        limit, None if it set none), priced at `price` (None: unpriced, free). Returns the hold,
        with the max_tokens the request must carry, or why the lease cannot pay for the call.
        A call without a reply limit of its own always carries the one it was held at."""
        b = self.budget
        if b.run_remaining_usd is None and b.run_remaining_tokens is None:
            return NO_HOLD
        smallest = min(MIN_REPLY_TOKENS, reply_tokens) if reply_tokens else MIN_REPLY_TOKENS
        asked = reply_tokens or UNCAPPED_REPLY_TOKENS
        with self._lock:
            cap = asked  # per reply; `choices` of them
            if b.run_remaining_tokens is not None:
                left_tokens = b.run_remaining_tokens - self._tokens - self._held_tokens
                cap = min(cap, (left_tokens - prompt_tokens) // choices)
                if cap < smallest:
                    return self._refusal("run_tokens", prompt_tokens, f"{max(left_tokens, 0)} tokens")
            if b.run_remaining_usd is not None and price is not None:
                left_usd = b.run_remaining_usd - self._usd - self._held_usd
                prompt_usd = prompt_tokens * price.worst_prompt / PER_MILLION
                if price.worst_completion > 0:
                    per_reply = (left_usd - prompt_usd) * PER_MILLION / price.worst_completion / choices
                    cap = min(cap, math.floor(per_reply))
                elif prompt_usd > left_usd:
                    cap = -1
                if cap < smallest:
                    return self._refusal("run_usd", prompt_tokens, f"${max(left_usd, 0.0):.6f}")
            replies = cap * choices
            usd = (
                0.0
                if price is None
                else (prompt_tokens * price.worst_prompt + replies * price.worst_completion) / PER_MILLION
            )
            must_carry = cap < asked or reply_tokens is None
            held = Hold(usd=usd, tokens=prompt_tokens + replies, reply_cap=cap if must_carry else None)
            self._held_usd += held.usd
            self._held_tokens += held.tokens
            return held

    def release(self, held: Hold) -> None:
        """The call is over (metered with `add`, or failed): its worst case is no longer held."""
        with self._lock:
            self._held_usd -= held.usd
            self._held_tokens -= held.tokens

    def _refusal(self, code: str, prompt_tokens: int, left: str) -> BudgetRefusal:
        b = self.budget
        lease = f"${b.run_remaining_usd:.6f}" if code == "run_usd" else f"{b.run_remaining_tokens} tokens"
        kind = "run budget" if code == "run_usd" else "run token budget"
        return BudgetRefusal(
            code,
            f"{kind} exhausted: this job's lease of {lease} of the run's budget has {left} left,"
            f" not enough for a call of about {prompt_tokens} prompt tokens and a reply",
        )
