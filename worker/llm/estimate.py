"""The gateway's estimate of a prompt's tokens before it goes upstream, learnt from answers.

The request as JSON at 4 characters a token is the raw estimate. A real server counts its own
way: a chat template adds a system prompt of its own (a fixed overhead), and a tokenizer may
take fewer characters a token than 4 (a ratio). One answer cannot tell the two apart, so each
is read both ways and the SMALLER explanation kept: "Hi" costing 31 tokens against 11 estimated
is 20 tokens of overhead, not a ratio of 2.8 that would hold a 3,000-token prompt as 8,500.
The estimate is the largest of these explanations over the calls seen, and never below the raw
estimate; it never exceeds what the largest measured ratio allows.
"""

from __future__ import annotations

import math
import threading
from collections import deque

KEPT = 64  # the most recent answers read; enough to follow one sandbox's prompts


class PromptEstimator:
    """Thread-safe; one per gateway."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: deque[tuple[int, int]] = deque(maxlen=KEPT)  # (raw estimate, real tokens)

    def estimate(self, raw: int) -> int:
        with self._lock:
            seen = list(self._seen)
        best = raw
        for seen_raw, real in seen:
            if real <= seen_raw:
                continue  # the raw estimate was enough for that call
            by_ratio = math.ceil(raw * real / seen_raw)
            by_overhead = raw + (real - seen_raw)
            best = max(best, min(by_ratio, by_overhead))
        return best

    def observe(self, raw: int, real: int) -> None:
        """An answer's real prompt tokens, for a request whose raw estimate was `raw`."""
        if raw > 0 and real > 0:
            with self._lock:
                self._seen.append((raw, real))
