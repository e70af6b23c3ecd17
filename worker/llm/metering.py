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
    CallStatus,
    LLMCall,
    RecordedMessage,
    UsageSummary,
    clip_message,
    record_messages,
)
from worker.llm.redact import Redactor
from worker.llm.request_fields import REPLY_LIMIT_KEYS, FieldRefusal, check_request
from worker.llm.retry import CallBounds
from worker.llm.upstream import Upstream, UpstreamError

log = logging.getLogger("clade.gateway")
# Retries end this long before the agent's client gives up, so that it reads the error.
CLIENT_MARGIN_S = 2.0


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
        # Set when the gateway stops: a call waiting to retry gives up at once.
        self._stopping = threading.Event()

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

    def stop(self) -> None:
        """No more retries: calls in flight end with their last error (the sandbox is going)."""
        self._stopping.set()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no upstream call is in flight; False if some still are after `timeout`."""
        with self._idle:
            return self._idle.wait_for(lambda: self._in_flight == 0, timeout=timeout)

    def complete(self, body: object, *, client_timeout_s: float | None = None) -> Reply:
        """One call. `client_timeout_s` is how long the caller waits for the answer (the openai
        client says so in a header): retries upstream end in time for it to read the error."""
        started_at, t0 = datetime.now(UTC), time.monotonic()
        if not isinstance(body, dict):
            return _error(400, "the request body must be a JSON object", "invalid_request_error")
        with self._lock:
            seq = next(self._seq)
        requested = body.get("model") if isinstance(body.get("model"), str) else None
        messages, truncated = record_messages(body.get("messages"), self._max_record_chars)
        tools = body.get("tools")
        tools_offered = len(tools) if isinstance(tools, list) else 0

        def record(status: CallStatus, http_status: int, **fields: Any) -> None:
            call = LLMCall(
                id=f"llm-{os.urandom(8).hex()}",
                seq=seq,
                purpose=self._purpose,
                model=fields.pop("model", None) or self._pinned_model or requested or "",
                requested_model=requested,
                started_at=started_at,
                duration_s=time.monotonic() - t0,
                status=status,
                http_status=http_status,
                request_messages=messages,
                truncated=truncated,
                tools_offered=tools_offered,
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
            record("error", 400, error=message, **_refused("stream_unsupported"))
            return _error(400, message, "invalid_request_error", "stream_unsupported")
        model = self._pinned_model or requested
        if not model:
            record("error", 400, error="no model given", **_refused(None))
            return _error(400, "'model' is required", "invalid_request_error")
        shape = check_request(body)
        if isinstance(shape, FieldRefusal):
            record("error", 400, error=shape.message, **_refused("unsupported_field"))
            return _error(400, shape.message, "invalid_request_error", "unsupported_field", param=shape.field)
        estimate = self._prompt_estimate(body)
        held = self._meter.check() or self._meter.hold(
            prompt_tokens=estimate,
            reply_tokens=shape.reply_tokens,
            price=self._prices.price(model),
            choices=shape.choices,
        )
        if isinstance(held, BudgetRefusal):
            record("budget_exceeded", 429, error=held.message, **_refused(held.code, "budget_exceeded"))
            reply = _error(429, held.message, "budget_exceeded", held.code)
            reply.headers["x-should-retry"] = "false"  # the openai client would retry a 429
            return reply
        if held.reply_cap is not None:  # the lease pays for no longer a reply than this
            # Every reply-limit key the agent sent: the upstream may honour either.
            keys = [k for k in REPLY_LIMIT_KEYS if body.get(k) is not None] or ["max_tokens"]
            body = {**body, **dict.fromkeys(keys, held.reply_cap)}
        with self._lock:
            self._in_flight += 1
        deadline = None if client_timeout_s is None else t0 + client_timeout_s - CLIENT_MARGIN_S
        try:
            return self._forward(body, model, record, estimate, deadline)
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

    def _forward(
        self,
        body: dict[str, Any],
        model: str,
        record: Callable[..., None],
        estimate: int,
        deadline: float | None,
    ) -> Reply:
        """Send the call upstream, meter what it cost and record it."""
        bounds = CallBounds(deadline=deadline, stop=self._stopping)
        try:
            response = self._upstream.chat_completions({**body, "model": model}, bounds)
        except UpstreamError as exc:
            status = 502 if exc.status in (401, 403) else exc.status  # our key, not the agent's
            message = self._redact(exc.message)
            waits = [a.wait_s for a in bounds.attempts if a.wait_s is not None]
            record(
                "error",
                status,
                error=message,
                error_code=exc.code,
                error_type=exc.error_type,
                error_source="upstream",
                upstream_status=exc.upstream_status,
                attempts=max(exc.attempts, len(bounds.attempts)),
                retry_waits_s=waits,
            )
            reply = _error(status, message, exc.error_type, exc.code)
            # The gateway has made its retries already: another round from the agent's client
            # would only repeat them against the same deadline. The agent's own loop decides.
            reply.headers["x-should-retry"] = "false"
            if exc.retry_after_s is not None:
                reply.headers["retry-after"] = str(math.ceil(exc.retry_after_s))
            return reply
        retried = {
            "attempts": len(bounds.attempts) + 1,
            "retry_waits_s": [a.wait_s for a in bounds.attempts if a.wait_s is not None],
        }
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
            **retried,
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
            return _error(status, self._redact(exc.message), exc.error_type, exc.code)

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


def _refused(code: str | None, error_type: str = "invalid_request_error") -> dict[str, Any]:
    """The record fields of a call the gateway itself refused (it never went upstream)."""
    return {"error_code": code, "error_type": error_type, "error_source": "gateway"}


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
