"""Fallback across a purpose's models: the next configured model answers when one is unavailable.

A run may give each purpose a list of models (`models.solve: [a, b]`, contracts/config.py): `a`
is the primary, and a call that `a` cannot answer is sent to `b`, the caller seeing only the
answer that counts. Every attempt goes through the same `MeteredChat`, so each is metered
against the same lease and recorded with its route (which model, primary or fallback, and what
the model before answered): the step's and the evaluation's usage show every model tried.

What falls back (the model is at fault, not the request):
- 404, or an error code `model_not_found` (the upstream does not serve that model);
- 401 and 403 from the upstream (the gateway answers them 502: this key may not use the model),
  and 502 itself (unreachable, or an answer that is not JSON);
- 408, 429 (rate limited: the upstream's own retries are spent), 500, 503, 504 (timed out), 529.
What does not: the gateway's own refusals (a spent budget, a refused field, streaming), and any
other 4xx (the request is at fault, so the next model would refuse it too), among them
`context_length_exceeded`. A model found missing (404) is skipped for the rest of the job.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from worker.llm.metering import MeteredChat, Reply
from worker.llm.records import CallRoute, LLMCall, UsageSummary

log = logging.getLogger("clade.gateway")

UNAVAILABLE_STATUSES = frozenset({404, 408, 429, 500, 502, 503, 504, 529})
MISSING_CODES = frozenset({"model_not_found"})
# Error types the gateway itself answers with: its refusals are about the call, not the model.
OWN_ERROR_TYPES = frozenset({"budget_exceeded", "invalid_request_error"})


def fallback_reason(reply: Reply) -> str | None:
    """Why the next model should be tried after `reply`, or None if it should not."""
    if reply.status < 400:
        return None
    error = reply.payload.get("error")
    error = error if isinstance(error, dict) else {}
    kind, code = str(error.get("type") or ""), str(error.get("code") or "")
    said = f"{reply.status} {code or kind}".strip()
    if code in MISSING_CODES or kind in MISSING_CODES:
        return said
    if reply.status in UNAVAILABLE_STATUSES and not (reply.status != 404 and kind in OWN_ERROR_TYPES):
        return said
    return None


def _missing(reply: Reply) -> bool:
    error = reply.payload.get("error")
    code = str(error.get("code") or "") if isinstance(error, dict) else ""
    return reply.status == 404 or code in MISSING_CODES


class FallbackChat:
    """`MeteredChat` with a fallback order; thread-safe. With one model (or none: the agent
    names it) calls go through unchanged, with no route on their records."""

    def __init__(self, chat: MeteredChat, models: Sequence[str]) -> None:
        self.chat = chat
        self.order = tuple(dict.fromkeys(models))
        self._missing: set[str] = set()
        self._lock = threading.Lock()

    @property
    def calls(self) -> list[LLMCall]:
        return self.chat.calls

    @property
    def usage(self) -> UsageSummary:
        return self.chat.usage

    def models(self) -> Reply:
        return self.chat.models()

    def complete(self, body: object, *, client_timeout_s: float | None = None) -> Reply:
        if len(self.order) < 2:
            return self.chat.complete(body, client_timeout_s=client_timeout_s)
        with self._lock:
            left = [m for m in self.order if m not in self._missing] or [self.order[-1]]
        after: str | None = None
        reply = Reply(500, {})
        for index, model in enumerate(left):
            why = "primary" if model == self.order[0] else "fallback"
            reply = self.chat.complete(
                body, CallRoute(model=model, why=why, after=after), client_timeout_s=client_timeout_s
            )
            reason = fallback_reason(reply)
            if reason is None:
                return reply
            if _missing(reply):
                with self._lock:
                    self._missing.add(model)
            if index + 1 < len(left):
                log.warning("model %s answered %s: trying %s", model, reason, left[index + 1])
            after = f"{model}: {reason}"
        return reply
