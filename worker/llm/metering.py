"""Metered chat completions: what the gateway does with one request, apart from HTTP.

Forwards the request's allow-listed fields (`request_fields`; never the agent's headers) to
the upstream, meters
tokens and cost, records every call, refuses calls once a budget is spent, and
keeps the real key out of anything sent back.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from worker.llm.budget import Budget, BudgetMeter, BudgetRefusal
from worker.llm.httpjson import openai_error
from worker.llm.pricing import PriceTable
from worker.llm.records import (
    DEFAULT_RECORD_CHARS,
    CallRoute,
    CallStatus,
    LLMCall,
    RecordedMessage,
    UsageSummary,
    clip_message,
    record_messages,
)
from worker.llm.redact import Redactor
from worker.llm.request_fields import REPLY_LIMIT_KEYS, FieldRefusal, check_request
from worker.llm.upstream import Upstream, UpstreamError

log = logging.getLogger("clade.gateway")


@dataclass
class Reply:
    status: int
    payload: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


class MeteredChat:
    """Thread-safe; one per sandbox. `secrets` are cut out of upstream error messages.

    `pinned_model` replaces whatever model the agent asks for (the run chooses).
    """

    def __init__(
        self,
        upstream: Upstream,
        prices: PriceTable,
        *,
        purpose: str,
        budget: Budget,
        pinned_model: str | None = None,
        max_record_chars: int = DEFAULT_RECORD_CHARS,
        secrets: Sequence[str] = (),
    ) -> None:
        self._upstream = upstream
        self._prices = prices
        self._purpose = purpose
        self._pinned_model = pinned_model
        self._max_record_chars = max_record_chars
        self._redact = Redactor(secrets)
        self._meter = BudgetMeter(budget)
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._calls: list[LLMCall] = []
        self._seq = itertools.count()
        self._in_flight = 0
        # Real prompt tokens per estimated one, the highest seen: estimates only ever grow to fit.
        self._prompt_ratio = 1.0

    @property
    def calls(self) -> list[LLMCall]:
        with self._lock:
            return list(self._calls)

    @property
    def usage(self) -> UsageSummary:
        return UsageSummary.of(self.calls)

    @property
    def in_flight(self) -> int:
        with self._lock:
            return self._in_flight

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no upstream call is in flight; False if some still are after `timeout`."""
        with self._idle:
            return self._idle.wait_for(lambda: self._in_flight == 0, timeout=timeout)

    def complete(self, body: object, route: CallRoute | None = None) -> Reply:
        """`route`: the configured model to send this call to instead of the pinned one (a
        fallback, worker/llm/fallback.py), kept on the call's record."""
        started_at, t0 = datetime.now(UTC), time.monotonic()
        if not isinstance(body, dict):
            return _error(400, "the request body must be a JSON object", "invalid_request_error")
        with self._lock:
            seq = next(self._seq)
        requested = body.get("model") if isinstance(body.get("model"), str) else None
        pinned = route.model if route is not None else self._pinned_model
        messages, truncated = record_messages(body.get("messages"), self._max_record_chars)

        def record(status: CallStatus, http_status: int, **fields: Any) -> None:
            call = LLMCall(
                id=f"llm-{os.urandom(8).hex()}",
                seq=seq,
                purpose=self._purpose,
                model=fields.pop("model", None) or pinned or requested or "",
                requested_model=requested,
                route=route,
                started_at=started_at,
                duration_s=time.monotonic() - t0,
                status=status,
                http_status=http_status,
                request_messages=messages,
                truncated=truncated,
                **fields,
            )
            with self._lock:
                self._calls.append(call)
            log.info(
                "LLM call %s (%s, %s): %s %d, %d+%d tokens, $%.6f",
                call.id,
                call.purpose,
                call.model,
                call.status,
                call.http_status,
                call.prompt_tokens,
                call.completion_tokens,
                call.cost_usd,
            )

        if body.get("stream"):
            message = "streaming is not supported by the Clade LLM gateway; send stream=false"
            record("error", 400, error=message)
            return _error(400, message, "invalid_request_error", "stream_unsupported")
        model = pinned or requested
        if not model:
            record("error", 400, error="no model given")
            return _error(400, "'model' is required", "invalid_request_error")
        shape = check_request(body)
        if isinstance(shape, FieldRefusal):
            record("error", 400, error=shape.message)
            return _error(400, shape.message, "invalid_request_error", "unsupported_field", param=shape.field)
        estimate = self._prompt_estimate(body)
        held = self._meter.check() or self._meter.hold(
            prompt_tokens=estimate,
            reply_tokens=shape.reply_tokens,
            price=self._prices.price(model),
            choices=shape.choices,
        )
        if isinstance(held, BudgetRefusal):
            record("budget_exceeded", 429, error=held.message)
            reply = _error(429, held.message, "budget_exceeded", held.code)
            reply.headers["x-should-retry"] = "false"  # the openai client would retry a 429
            return reply
        if held.reply_cap is not None:  # the lease pays for no longer a reply than this
            # Every reply-limit key the agent sent: the upstream may honour either.
            keys = [k for k in REPLY_LIMIT_KEYS if body.get(k) is not None] or ["max_tokens"]
            body = {**body, **dict.fromkeys(keys, held.reply_cap)}
        with self._lock:
            self._in_flight += 1
        try:
            return self._forward(body, model, record, estimate)
        finally:
            self._meter.release(held)
            # Only once the call is metered and recorded: `wait_idle` promises exactly that.
            with self._idle:
                self._in_flight -= 1
                self._idle.notify_all()

    def _prompt_estimate(self, body: dict[str, Any]) -> int:
        """The prompt's tokens, from the request as JSON at 4 characters a token, scaled by the
        worst ratio of real to estimated tokens this gateway has seen."""
        raw = _raw_prompt_estimate(body)
        with self._lock:
            return math.ceil(raw * self._prompt_ratio)

    def _forward(self, body: dict[str, Any], model: str, record: Callable[..., None], estimate: int) -> Reply:
        """Send the call upstream, meter what it cost and record it."""
        try:
            response = self._upstream.chat_completions({**body, "model": model})
        except UpstreamError as exc:
            status = 502 if exc.status in (401, 403) else exc.status  # our key, not the agent's
            message = self._redact(exc.message)
            record("error", status, error=message)
            return _error(status, message, exc.error_type)
        prompt, completion, estimated = _usage(response, body.get("messages"))
        raw = _raw_prompt_estimate(body)
        if not estimated and raw > 0 and prompt > estimate:
            with self._lock:
                self._prompt_ratio = max(self._prompt_ratio, prompt / raw)
        answered = response.get("model") if isinstance(response.get("model"), str) else model
        cost, known = self._cost(str(answered), model, prompt, completion)
        self._meter.add(cost, prompt + completion)
        record(
            "ok",
            200,
            model=answered,
            prompt_tokens=prompt,
            completion_tokens=completion,
            cost_usd=cost,
            price_known=known,
            usage_estimated=estimated,
            response_message=_first_message(response, self._max_record_chars),
        )
        return Reply(200, response)

    def models(self) -> Reply:
        if self._pinned_model is not None:
            entry = {
                "id": self._pinned_model,
                "object": "model",
                "created": 0,
                "owned_by": "clade-gateway",
            }
            return Reply(200, {"object": "list", "data": [entry]})
        try:
            return Reply(200, self._upstream.list_models())
        except UpstreamError as exc:
            status = 502 if exc.status in (401, 403) else exc.status
            return _error(status, self._redact(exc.message), exc.error_type)

    def _cost(self, answered: str, asked: str, prompt: int, completion: int) -> tuple[float, bool]:
        # Price what answered (e.g. a dated snapshot); fall back to the name that was asked for.
        cost, known = self._prices.cost(answered, prompt, completion)
        return (cost, known) if known else self._prices.cost(asked, prompt, completion)


def _error(
    status: int, message: str, error_type: str, code: str | None = None, *, param: str | None = None
) -> Reply:
    payload = openai_error(message, error_type, code)
    if param is not None:
        payload["error"]["param"] = param
    return Reply(status, payload)


def _raw_prompt_estimate(body: dict[str, Any]) -> int:
    # The whole (allow-listed) request: schemas in `response_format` are prompt tokens too.
    text = json.dumps(body, default=str)
    return -(-len(text) // 4)


def _usage(response: dict[str, Any], request_messages: object) -> tuple[int, int, bool]:
    """(prompt, completion, estimated): the upstream's own figures, else about 4 chars a token."""
    usage = response.get("usage")
    if isinstance(usage, dict):
        prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
        if isinstance(prompt, int) and isinstance(completion, int):
            return max(prompt, 0), max(completion, 0), False
    reply = _first_message(response, 10**9)
    prompt_chars = len(json.dumps(request_messages, default=str))
    return -(-prompt_chars // 4), -(-(reply.size() if reply else 0) // 4), True


def _first_message(response: dict[str, Any], max_chars: int) -> RecordedMessage | None:
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    return clip_message(RecordedMessage.from_openai(choices[0].get("message")), max_chars)
