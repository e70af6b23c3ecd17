"""Metered chat completions: what the gateway does with one request, apart from HTTP.

Forwards the request's allow-listed fields (`request_fields`; never the agent's headers) to
the upstream, meters tokens and cost, records every call, refuses calls once a budget is spent,
and keeps the real key out of anything sent back.

A try the upstream received but never answered may still be billed (a provider finishes and
charges a completion whose client went away). Such a try, timed out or still in flight when the
sandbox stops (`abandon`), is counted at the prompt's estimate (the one its budget hold used) and
the reply limit the request carried (the prompt alone when it carried none), flagged as estimated.
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
from worker.llm.estimate import PromptEstimator
from worker.llm.httpjson import openai_error
from worker.llm.pricing import ModelPrice, PriceTable, TokenUsage, price_reply, reported_usage
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
from worker.llm.request_fields import REPLY_LIMIT_KEYS, FieldRefusal, check_request, refused_reply_key
from worker.llm.retry import Attempt, CallBounds
from worker.llm.upstream import Upstream, UpstreamError

log = logging.getLogger("clade.gateway")
# Retries end this long before the agent's client gives up, so that it reads the error.
CLIENT_MARGIN_S = 2.0


@dataclass
class Reply:
    status: int
    payload: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Bound:
    """What one unanswered try of a call is counted at: its prompt's estimate and its reply limit."""

    prompt: int
    completion: int
    price: ModelPrice | None

    def times(self, tries: int) -> TokenUsage:
        return TokenUsage(self.prompt * tries, self.completion * tries)

    def usd(self, usage: TokenUsage) -> float:
        return 0.0 if self.price is None else self.price.usd(usage)


@dataclass
class _OpenCall:
    """A call gone upstream and not yet recorded; whoever closes it first records it."""

    record: Callable[..., None]
    bound: _Bound
    bounds: CallBounds


class MeteredChat:
    """Thread-safe; one per sandbox. `secrets` are cut out of upstream error messages.

    `pinned_model` replaces whatever model the agent asks for (the run chooses); a call is
    priced as the model it was made for (pinned, else asked for), whatever name the upstream
    answers, which is recorded beside it.
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
        self._open: dict[int, _OpenCall] = {}
        self._estimator = PromptEstimator()
        # Reply-limit keys this upstream refused (e.g. both at once): not sent again.
        self._refused_keys: set[str] = set()
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

    def abandon(self) -> int:
        """Record every call still in flight as unanswered (the sandbox is gone and its records are
        being read): each is counted at its bound. Their answers, if they come, are dropped.
        Returns how many were recorded."""
        with self._lock:
            open_calls = list(self._open.values())
            self._open.clear()
        for call in open_calls:
            tries = _unanswered(call.bounds.attempts) + 1  # the try in flight
            usage = call.bound.times(tries)
            cost = call.bound.usd(usage)
            self._meter.add(cost, usage.prompt + usage.completion)
            call.record(
                "error",
                504,
                error="the call was still waiting for the upstream when its sandbox stopped; counted at"
                " its prompt's estimate and its reply limit",
                error_code="call_abandoned",
                error_type="upstream_error",
                error_source="gateway",
                attempts=len(call.bounds.attempts) + 1,
                prompt_tokens=usage.prompt,
                completion_tokens=usage.completion,
                cost_usd=cost,
                price_known=call.bound.price is not None,
                usage_estimated=True,
                **_unanswered_fields(tries, usage),
            )
        return len(open_calls)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no upstream call is in flight; False if some still are after `timeout`."""
        with self._idle:
            return self._idle.wait_for(lambda: self._in_flight == 0, timeout=timeout)

    def complete(
        self, body: object, route: CallRoute | None = None, *, client_timeout_s: float | None = None
    ) -> Reply:
        """One call. `route`: the configured model to send this call to instead of the pinned one
        (a fallback, worker/llm/fallback.py), kept on the call's record. `client_timeout_s` is how
        long the caller waits for the answer (the openai client says so in a header): retries
        upstream end in time for it to read the error."""
        started_at, t0 = datetime.now(UTC), time.monotonic()
        if not isinstance(body, dict):
            return _error(400, "the request body must be a JSON object", "invalid_request_error")
        with self._lock:
            seq = next(self._seq)
        requested = body.get("model") if isinstance(body.get("model"), str) else None
        pinned = route.model if route is not None else self._pinned_model
        messages, truncated = record_messages(body.get("messages"), self._max_record_chars)
        tools = body.get("tools")
        tools_offered = len(tools) if isinstance(tools, list) else 0

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
        model = pinned or requested
        if not model:
            record("error", 400, error="no model given", **_refused(None))
            return _error(400, "'model' is required", "invalid_request_error")
        shape = check_request(body)
        if isinstance(shape, FieldRefusal):
            record("error", 400, error=shape.message, **_refused("unsupported_field"))
            return _error(400, shape.message, "invalid_request_error", "unsupported_field", param=shape.field)
        raw = _raw_prompt_estimate(body)
        estimate = self._estimator.estimate(raw)
        price = self._prices.price(model)
        asked = self._meter.reply_limit(shape.reply_tokens)
        held = self._meter.check() or self._meter.hold(
            prompt_tokens=estimate, reply_tokens=asked, price=price, choices=shape.choices
        )
        if isinstance(held, BudgetRefusal) and estimate > raw and self._meter.check() is None:
            # What earlier calls taught the estimate is a bound, not a measure: a call the lease
            # pays for at the request's own size goes ahead (its reply capped to fit).
            retry = self._meter.hold(
                prompt_tokens=raw, reply_tokens=asked, price=price, choices=shape.choices
            )
            held = held if isinstance(retry, BudgetRefusal) else retry
        if isinstance(held, BudgetRefusal):
            record("budget_exceeded", 429, error=held.message, **_refused(held.code, "budget_exceeded"))
            reply = _error(429, held.message, "budget_exceeded", held.code)
            reply.headers["x-should-retry"] = "false"  # the openai client would retry a 429
            return reply
        limit = held.reply_cap if held.reply_cap is not None else asked
        if limit is not None:
            # The reply limit the lease was held at, under every key an upstream may honour
            # (llama-cpp-python ignores max_completion_tokens, older servers know only max_tokens).
            body = self._with_reply_limit(body, limit)
        deadline = None if client_timeout_s is None else t0 + client_timeout_s - CLIENT_MARGIN_S
        bounds = CallBounds(deadline=deadline, stop=self._stopping)
        bound = _Bound(estimate, (limit or 0) * shape.choices, price)
        with self._lock:
            self._in_flight += 1
            self._open[seq] = _OpenCall(record, bound, bounds)
        try:
            return self._forward(body, model, seq, raw, bounds)
        finally:
            self._meter.release(held)
            # Only once the call is metered and recorded: `wait_idle` promises exactly that.
            with self._idle:
                self._in_flight -= 1
                self._idle.notify_all()

    def _with_reply_limit(self, body: dict[str, Any], limit: int) -> dict[str, Any]:
        with self._lock:
            refused = set(self._refused_keys)
        kept = {k: v for k, v in body.items() if k not in refused}
        return kept | dict.fromkeys((k for k in REPLY_LIMIT_KEYS if k not in refused), limit)

    def _send(self, body: dict[str, Any], bounds: CallBounds) -> dict[str, Any]:
        """The upstream's answer; a refusal of one of the reply-limit keys we wrote (OpenAI refuses
        both at once, some servers refuse `max_completion_tokens`) is retried once without it,
        and the key is not sent to this upstream again."""
        try:
            return self._upstream.chat_completions(body, bounds)
        except UpstreamError as exc:
            sent = [k for k in REPLY_LIMIT_KEYS if body.get(k) is not None]
            refused = refused_reply_key(exc.status, exc.message, sent)
            if refused is None:
                raise
            log.info("upstream refused %r (%s); sending the reply limit without it", refused, exc.message)
            with self._lock:
                self._refused_keys.add(refused)
            return self._upstream.chat_completions({k: v for k, v in body.items() if k != refused}, bounds)

    def _close(self, seq: int) -> _OpenCall | None:
        """The call's entry, taken; None when `abandon` recorded it already."""
        with self._lock:
            return self._open.pop(seq, None)

    def _forward(self, body: dict[str, Any], model: str, seq: int, raw: int, bounds: CallBounds) -> Reply:
        """Send the call upstream, meter what it cost and record it."""
        try:
            response = self._send({**body, "model": model}, bounds)
        except UpstreamError as exc:
            status = 502 if exc.status in (401, 403) else exc.status  # our key, not the agent's
            message = self._redact(exc.message)
            reply = _error(status, message, exc.error_type, exc.code)
            call = self._close(seq)
            if call is None:
                return reply  # recorded when its sandbox stopped
            tries = _unanswered(bounds.attempts)
            charged = call.bound.times(tries)
            cost = call.bound.usd(charged)
            self._meter.add(cost, charged.prompt + charged.completion)
            call.record(
                "error",
                status,
                error=message,
                error_code=exc.code,
                error_type=exc.error_type,
                error_source="upstream",
                upstream_status=exc.upstream_status,
                attempts=max(exc.attempts, len(bounds.attempts)),
                retry_waits_s=[a.wait_s for a in bounds.attempts if a.wait_s is not None],
                prompt_tokens=charged.prompt,
                completion_tokens=charged.completion,
                cost_usd=cost,
                price_known=call.bound.price is not None,
                usage_estimated=tries > 0,
                **_unanswered_fields(tries, charged),
            )
            # The gateway has made its retries already: another round from the agent's client
            # would only repeat them against the same deadline. The agent's own loop decides.
            reply.headers["x-should-retry"] = "false"
            if exc.retry_after_s is not None:
                reply.headers["retry-after"] = str(math.ceil(exc.retry_after_s))
            return reply
        usage, estimated = _usage(response, body.get("messages"))
        if not estimated:
            self._estimator.observe(raw, usage.prompt)
        call = self._close(seq)
        if call is None:
            log.info("an answer came after its sandbox stopped; the call was counted at its bound")
            return Reply(200, response)
        priced = price_reply(self._prices, model, response, usage=usage)
        tries = _unanswered(bounds.attempts)
        unanswered = call.bound.times(tries)
        cost = priced.cost_usd + call.bound.usd(unanswered)
        self._meter.add(cost, usage.prompt + usage.completion + unanswered.prompt + unanswered.completion)
        call.record(
            "ok",
            200,
            answered_model=priced.answered_model,
            prompt_tokens=usage.prompt + unanswered.prompt,
            completion_tokens=usage.completion + unanswered.completion,
            cached_prompt_tokens=usage.cached_prompt,
            reasoning_tokens=usage.reasoning,
            cost_usd=cost,
            price_known=priced.price_known,
            usage_estimated=estimated or tries > 0,
            **_unanswered_fields(tries, unanswered),
            response_message=_first_message(response, self._max_record_chars),
            attempts=len(bounds.attempts) + 1,
            retry_waits_s=[a.wait_s for a in bounds.attempts if a.wait_s is not None],
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


def _unanswered(attempts: list[Attempt]) -> int:
    """Failed tries the upstream received and never answered: those that timed out. (A refused
    connection never reached it; an error status is an answer, with nothing to bill.)"""
    return sum(1 for a in attempts if a.code == "upstream_timeout")


def _unanswered_fields(tries: int, charged: TokenUsage) -> dict[str, int]:
    return {
        "unanswered_attempts": tries,
        "unanswered_prompt_tokens": charged.prompt,
        "unanswered_completion_tokens": charged.completion,
    }


def _raw_prompt_estimate(body: dict[str, Any]) -> int:
    # The whole (allow-listed) request: schemas in `response_format` are prompt tokens too.
    text = json.dumps(body, default=str)
    return -(-len(text) // 4)


def _usage(response: dict[str, Any], request_messages: object) -> tuple[TokenUsage, bool]:
    """(usage, estimated): the upstream's own figures, else about 4 chars a token."""
    reported = reported_usage(response)
    if reported is not None:
        return reported, False
    reply = _first_message(response, 10**9)
    prompt_chars = len(json.dumps(request_messages, default=str))
    return TokenUsage(-(-prompt_chars // 4), -(-(reply.size() if reply else 0) // 4)), True


def _first_message(response: dict[str, Any], max_chars: int) -> RecordedMessage | None:
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    return clip_message(RecordedMessage.from_openai(choices[0].get("message")), max_chars)
