"""Money that is right and caps that hold (issue 20): what the gateway charges and forwards.

The upstreams here are the scripted model (a stand-in, not a real LLM) or small in-process
stand-ins that answer as the real servers of the issue did: a chat template's own tokens on top
of the prompt, cached and reasoning token details, OpenAI's refusal of two reply limits at once.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from contracts.prices import MAX_PRICE_PER_MILLION, TokenUsage
from contracts.records import MAX_CALL_TOKENS, UsageRecord
from worker.llm.budget import Budget
from worker.llm.estimate import PromptEstimator
from worker.llm.metering import MeteredChat
from worker.llm.pricing import ModelPrice, PriceTable, price_reply
from worker.llm.script import Script
from worker.llm.scripted import ScriptedServer
from worker.llm.upstream import OpenAICompatibleUpstream, UpstreamHTTPError
from worker.usage import usage_records

from .support import REAL_KEY, ask

LOCAL = ModelPrice(prompt=0.0, completion=0.0)


def _server(answers_as: str = "scripted-substitute", content: str = "ok") -> ScriptedServer:
    """The scripted model, answering under the name `answers_as` to a call for any model not
    named scripted* (as llama-server answers "smollm2" to a call for any model)."""
    script = {"version": 1, "model": answers_as, "default": {"content": content}}
    return ScriptedServer(Script.model_validate(script), api_key=REAL_KEY)


def test_a_call_is_priced_by_the_model_configured_for_it_not_the_name_answered() -> None:
    """Fails on main: the answered name was priced first, so a run's free local model answering
    under a priced name was charged that name's price (here the scripted model's)."""
    table = PriceTable.default().layered({"smollm2": LOCAL})  # the run declares its local model free
    with _server() as server:
        upstream = OpenAICompatibleUpstream(server.base_url, REAL_KEY, timeout=10)
        chat = MeteredChat(upstream, table, purpose="solve", budget=Budget(), pinned_model="smollm2")
        assert chat.complete({"model": "whatever", "messages": ask("hello")}).status == 200
        upstream.close()
    (call,) = chat.calls
    assert (call.model, call.requested_model) == ("smollm2", "whatever")
    assert call.answered_model == "scripted-substitute"
    assert call.prompt_tokens > 0 and call.cost_usd == 0.0 and call.price_known


def test_doctor_and_the_gateway_price_the_same_call_the_same() -> None:
    """Fails on main: the doctor priced the answered name (llama-server's "smollm2": "no price
    known"; here the scripted stand-in's name: its price), not the model it asked for."""
    from cli.doctor import Status, check_llm
    from contracts.settings import Settings

    with _server() as server:
        settings = Settings(llm_base_url=server.base_url, llm_api_key=REAL_KEY)
        check = check_llm(settings, "gpt-4o-mini")
        upstream = OpenAICompatibleUpstream(server.base_url, REAL_KEY, timeout=10)
        chat = MeteredChat(upstream, PriceTable.default(), purpose="solve", budget=Budget())
        chat.complete({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Say OK."}]})
        upstream.close()
        doctor_body = server.requests[0].body
    (call,) = chat.calls
    assert call.price_known and call.cost_usd > 0 and call.answered_model == "scripted-substitute"
    assert check.status is Status.OK, check.detail
    assert "as 'scripted-substitute'" in check.detail
    # The doctor's call asked for one token; priced by the same function, at gpt-4o-mini's price.
    assert isinstance(doctor_body, dict)
    price = PriceTable.default().price("gpt-4o-mini")
    assert price is not None
    tokens = check.detail.split(": ")[-1].split(" tokens")[0]
    prompt, completion = (int(n) for n in tokens.split("+"))
    assert f"${(prompt * price.prompt + completion * price.completion) / 1e6:.6f}" in check.detail


def test_doctor_warns_of_a_model_with_no_price() -> None:
    from cli.doctor import Status, check_llm
    from contracts.settings import Settings

    with _server() as server:
        check = check_llm(Settings(llm_base_url=server.base_url, llm_api_key=REAL_KEY), "smollm2")
    assert check.status is Status.WARN and "no price known for smollm2" in check.detail
    assert check.advice is not None and "models.prices" in check.advice


class DetailedUsage:
    """An upstream that reports cached prompt tokens and reasoning tokens, as OpenAI does."""

    def chat_completions(self, body: dict[str, Any], bounds: object = None) -> dict[str, Any]:
        return {
            "id": "x",
            "object": "chat.completion",
            "model": str(body["model"]),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
            "usage": {
                "prompt_tokens": 1_000_000,
                "completion_tokens": 1_000_000,
                "prompt_tokens_details": {"cached_tokens": 600_000},
                "completion_tokens_details": {"reasoning_tokens": 250_000},
            },
        }

    def list_models(self) -> dict[str, Any]:
        return {"object": "list", "data": []}

    def close(self) -> None:
        pass


def test_cached_and_reasoning_tokens_are_priced_at_their_own_rates() -> None:
    price = ModelPrice(prompt=2.0, completion=8.0, cached_prompt=0.5, reasoning=16.0)
    chat = MeteredChat(DetailedUsage(), PriceTable({"r1": price}), purpose="solve", budget=Budget())
    assert chat.complete({"model": "r1", "messages": ask("hello")}).status == 200
    (call,) = chat.calls
    assert (call.cached_prompt_tokens, call.reasoning_tokens) == (600_000, 250_000)
    # 400k prompt at $2 + 600k cached at $0.5 + 750k completion at $8 + 250k reasoning at $16.
    assert call.cost_usd == pytest.approx(0.8 + 0.3 + 6.0 + 4.0)
    # Without rates of their own they are plain prompt and completion tokens.
    plain = price_reply(
        PriceTable({"r1": ModelPrice(prompt=2.0, completion=8.0)}),
        "r1",
        DetailedUsage().chat_completions({"model": "r1"}),
    )
    assert plain.cost_usd == pytest.approx(2.0 + 8.0)


def test_the_lease_cap_is_sent_under_every_reply_limit_key() -> None:
    """Fails on main: the cap went only under the key the agent sent (`max_completion_tokens`),
    which llama-cpp-python ignores: a 150-token lease generated to the end of the context."""
    with _server(content="word " * 400) as server:
        upstream = OpenAICompatibleUpstream(server.base_url, REAL_KEY, timeout=10)
        chat = MeteredChat(
            upstream, PriceTable.default(), purpose="solve", budget=Budget(run_remaining_tokens=150)
        )
        assert (
            chat.complete({"model": "scripted", "messages": ask("hi"), "max_completion_tokens": 4000}).status
            == 200
        )
        upstream.close()
        body = server.requests[0].body
    assert isinstance(body, dict)
    cap = body["max_completion_tokens"]
    assert body["max_tokens"] == cap and 16 <= cap < 150
    (call,) = chat.calls
    assert call.prompt_tokens + call.completion_tokens <= 150


class RefusesTwoLimits:
    """OpenAI: "Setting 'max_tokens' and 'max_completion_tokens' at the same time is not supported"."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def chat_completions(self, body: dict[str, Any], bounds: object = None) -> dict[str, Any]:
        self.bodies.append(body)
        if "max_tokens" in body and "max_completion_tokens" in body:
            raise UpstreamHTTPError(
                400,
                "upstream: Setting 'max_tokens' and 'max_completion_tokens' at the same time"
                " is not supported.",
                "invalid_request_error",
            )
        return DetailedUsage().chat_completions(body) | {
            "usage": {"prompt_tokens": 9, "completion_tokens": 3}
        }

    def list_models(self) -> dict[str, Any]:
        return {"object": "list", "data": []}

    def close(self) -> None:
        pass


def test_an_upstream_that_refuses_two_reply_limits_gets_one_from_then_on() -> None:
    upstream = RefusesTwoLimits()
    chat = MeteredChat(upstream, PriceTable.default(), purpose="solve", budget=Budget(run_remaining_usd=1.0))
    for _ in range(2):
        assert chat.complete({"model": "gpt-4o", "messages": ask("hi"), "max_tokens": 50}).status == 200
    sent = [sorted(k for k in ("max_tokens", "max_completion_tokens") if k in b) for b in upstream.bodies]
    # Refused once, retried with the newer key alone; the second call sends it alone at once.
    assert sent == [
        ["max_completion_tokens", "max_tokens"],
        ["max_completion_tokens"],
        ["max_completion_tokens"],
    ]
    assert [b["max_completion_tokens"] for b in upstream.bodies] == [50, 50, 50]
    assert [c.status for c in chat.calls] == ["ok", "ok"]


class ChatTemplate:
    """A server whose chat template adds a system prompt of its own: 40 tokens on every call, on
    top of about 4 characters a token of the messages' text (the issue's "Hi" cost 31 tokens
    against 11 estimated)."""

    OVERHEAD = 40

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def chat_completions(self, body: dict[str, Any], bounds: object = None) -> dict[str, Any]:
        self.bodies.append(body)
        text = sum(len(str(m.get("content") or "")) for m in body["messages"])
        reply = 2
        return DetailedUsage().chat_completions(body) | {
            "usage": {"prompt_tokens": self.OVERHEAD + math.ceil(text / 4), "completion_tokens": reply}
        }

    def list_models(self) -> dict[str, Any]:
        return {"object": "list", "data": []}

    def close(self) -> None:
        pass


def test_a_short_call_does_not_make_a_long_prompt_be_held_three_times_over() -> None:
    """Fails on main: after "Hi" the estimate took the ratio of real to estimated tokens (about
    3) for every prompt, held a 3,000-token prompt as about 9,000 and refused a call the lease
    could pay."""
    upstream = ChatTemplate()
    chat = MeteredChat(
        upstream, PriceTable.default(), purpose="solve", budget=Budget(run_remaining_tokens=4_000)
    )
    assert chat.complete({"model": "scripted", "messages": [{"role": "user", "content": "Hi"}]}).status == 200
    long_prompt = [{"role": "user", "content": "word " * 2_400}]  # 12,000 characters
    assert chat.complete({"model": "scripted", "messages": long_prompt}).status == 200
    first, second = chat.calls
    assert second.prompt_tokens == 40 + 3_000
    # The reply the lease paid for, with the prompt as it really was, stays within the lease.
    cap = upstream.bodies[1]["max_tokens"]
    assert first.prompt_tokens + first.completion_tokens + second.prompt_tokens + cap <= 4_000
    assert cap >= 16


def test_the_estimate_is_bounded_by_the_ratio_and_reads_a_template_as_overhead() -> None:
    """Fails on main (there was no bounded estimate: "Hi" made every later prompt about 2.8x)."""
    estimator = PromptEstimator()
    assert estimator.estimate(3_384) == 3_384  # nothing seen: the request's own size
    estimator.observe(11, 31)  # "Hi": 20 tokens of a template's own
    assert estimator.estimate(3_384) == 3_404  # not 9,543
    assert estimator.estimate(5) <= math.ceil(5 * 31 / 11)  # never more than the ratio allows
    estimator.observe(1_000, 1_300)  # a tokenizer denser than 4 characters a token
    assert estimator.estimate(2_000) == 2_300
    assert estimator.estimate(100) >= 100  # never below the request's own size


def test_a_call_the_lease_pays_at_its_own_size_is_not_refused_for_the_estimate() -> None:
    """A call refused at the learnt estimate goes ahead when the lease pays for it at the
    request's own size (fails on main: refused with 429)."""
    upstream = ChatTemplate()
    chat = MeteredChat(
        upstream, PriceTable.default(), purpose="solve", budget=Budget(run_remaining_tokens=1_200)
    )
    chat.complete({"model": "scripted", "messages": [{"role": "user", "content": "x" * 400}]})
    raw_body = {"model": "scripted", "messages": [{"role": "user", "content": "y" * 4_000}]}
    raw = -(-len(json.dumps(raw_body)) // 4)
    assert chat.complete(raw_body).status == 200, chat.calls[-1].error
    assert upstream.bodies[1]["max_tokens"] <= 1_200 - raw


@pytest.mark.parametrize(("asked", "sent"), [(4000, 64), (None, 64), (20, 20)])
def test_the_runs_reply_limit_lowers_every_request_to_it(asked: int | None, sent: int) -> None:
    """`budget.max_reply_tokens: 64`: a request asking more, or naming no limit, goes upstream
    with 64 under both keys; one asking less keeps its own. No lease is needed for it."""
    with _server(content="word " * 400) as server:
        upstream = OpenAICompatibleUpstream(server.base_url, REAL_KEY, timeout=10)
        chat = MeteredChat(upstream, PriceTable.default(), purpose="solve", budget=Budget(reply_tokens=64))
        body: dict[str, Any] = {"model": "scripted", "messages": ask("hi")}
        if asked is not None:
            body["max_tokens"] = asked
        assert chat.complete(body).status == 200
        upstream.close()
        forwarded = server.requests[0].body
    assert isinstance(forwarded, dict)
    assert (forwarded["max_tokens"], forwarded["max_completion_tokens"]) == (sent, sent)
    (call,) = chat.calls
    assert call.completion_tokens <= sent


class AbsurdUsage:
    """A server whose usage report no model could have run up (a broken counter, a hostile
    proxy): billions of tokens for a two-letter prompt."""

    def __init__(self, usage: dict[str, Any]) -> None:
        self.usage = usage

    def chat_completions(self, body: dict[str, Any], bounds: object = None) -> dict[str, Any]:
        return DetailedUsage().chat_completions(body) | {"usage": self.usage}

    def list_models(self) -> dict[str, Any]:
        return {"object": "list", "data": []}

    def close(self) -> None:
        pass


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": 5_000_000_000, "completion_tokens": 1},
        {"prompt_tokens": 3, "completion_tokens": 10**30},
    ],
)
def test_a_usage_no_model_could_run_up_is_estimated_and_still_reported(usage: dict[str, Any]) -> None:
    chat = MeteredChat(
        AbsurdUsage(usage), PriceTable.default(), purpose="solve", budget=Budget(run_remaining_usd=1.0)
    )
    assert chat.complete({"model": "gpt-4o", "messages": ask("hi"), "max_tokens": 50}).status == 200
    (call,) = chat.calls
    # Counted by the gateway (about 4 characters a token), not billed at the server's figure ...
    assert call.usage_estimated and call.prompt_tokens < 100 and call.completion_tokens < 100
    assert 0 < call.cost_usd < 0.01
    # ... so the worker can still report the call to the service, which takes at most a billion.
    (record,) = usage_records(chat.calls)
    assert record.prompt_tokens == call.prompt_tokens and record.cost_usd == call.cost_usd


def test_a_price_above_any_model_is_refused_and_the_dearest_call_fits_a_usage_record() -> None:
    with pytest.raises(ValueError, match="less than or equal to 10000"):
        ModelPrice(prompt=0.5, completion=20_000)
    dearest = ModelPrice(prompt=MAX_PRICE_PER_MILLION, completion=MAX_PRICE_PER_MILLION)
    cost = dearest.usd(TokenUsage(MAX_CALL_TOKENS, MAX_CALL_TOKENS))
    assert UsageRecord(purpose="solve", model="m", prompt_tokens=1, completion_tokens=1, cost_usd=cost)
