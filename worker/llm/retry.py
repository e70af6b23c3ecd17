"""When the upstream client tries a chat completion again, and how long it waits first.

Retried: 429 (rate limits; after the server's `Retry-After` when it sends one and it is within
`max_retry_after_s`), 500, 502, 503 and 504, a connection that failed or was reset, a timeout and
a body cut short or not JSON. Never retried: any other 4xx (a bad request stays bad; a context
overflow stays too long), nor a 429 whose code says the account's quota is spent.
Waits grow as `backoff_s * 2**n` with full jitter, capped at `max_backoff_s`; no attempt starts
after the call's deadline and no wait runs past it, and a call that is stopped (its gateway is
closing with its sandbox) makes no further attempt.
"""

from __future__ import annotations

import email.utils
import random
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict, Field

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
# A 429 with one of these codes is a spent account or plan: waiting does not bring money back.
NO_RETRY_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached", "budget_exceeded"})


class RetryPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_attempts: int = Field(default=3, ge=1, le=10, description="tries in all, the first included")
    backoff_s: float = Field(default=0.5, ge=0, description="the first wait's upper bound")
    max_backoff_s: float = Field(default=8.0, ge=0, description="no backoff wait is longer")
    max_retry_after_s: float = Field(
        default=20.0, ge=0, description="a longer Retry-After is not waited for: the error is answered"
    )

    def backoff(self, retry: int, rng: random.Random) -> float:
        """The wait before retry number `retry` (0 for the first), with full jitter."""
        return rng.uniform(0.0, min(self.max_backoff_s, self.backoff_s * 2**retry))


@dataclass
class Attempt:
    """One failed try of a call, as the call record keeps it."""

    error: str
    status: int | None  # the upstream's HTTP status; None: no answer (timeout, reset)
    code: str | None
    wait_s: float | None = None  # how long the client waited before the next try; None: it gave up


@dataclass
class CallBounds:
    """What one call may take: a `time.monotonic()` deadline, a stop signal, and where its
    failed attempts are written (the caller reads them after the call, failed or not)."""

    deadline: float | None = None
    stop: threading.Event | None = None
    attempts: list[Attempt] = field(default_factory=list)

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def wait(self, seconds: float) -> bool:
        """Sleep `seconds` (or until stopped); False if the call was stopped meanwhile."""
        if self.stop is None:
            time.sleep(seconds)
            return True
        return not self.stop.wait(seconds)

    @property
    def stopped(self) -> bool:
        return self.stop is not None and self.stop.is_set()


def retry_after_s(headers: dict[str, str], now: datetime | None = None) -> float | None:
    """The server's wish in seconds: `retry-after-ms` (OpenAI), else `Retry-After` in seconds or as
    an HTTP date; None when it sent neither or something unreadable."""
    lower = {k.lower(): v for k, v in headers.items()}
    millis = lower.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def retryable_status(status: int, code: str | None) -> bool:
    return status in RETRY_STATUSES and not (status == 429 and code in NO_RETRY_CODES)
