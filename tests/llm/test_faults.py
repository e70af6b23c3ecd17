"""What real servers send, driven by the fault proxy in front of the scripted model (a stand-in,
said so), through the gateway as an agent's openai client reaches it.

Each fault: whether the gateway retried (the proxy counts the requests it saw), what the agent's
client got (status, OpenAI-shaped error, the upstream's code), and what the call record keeps.
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest

from worker.llm.budget import Budget
from worker.llm.gateway import GatewayConfig, LLMGateway
from worker.llm.pricing import PriceTable
from worker.llm.retry import RetryPolicy
from worker.llm.scripted import ScriptedServer
from worker.llm.upstream import OpenAICompatibleUpstream

from . import fault_proxy as fp
from .support import REAL_KEY, ask

pytestmark = pytest.mark.timeout(120)

FAST = RetryPolicy(max_attempts=3, backoff_s=0.05, max_backoff_s=0.2, max_retry_after_s=20)
ATTEMPT_TIMEOUT_S = 1.0  # the "hang" fault never answers: each attempt gives up after this


@pytest.fixture
def proxy(scripted: ScriptedServer) -> Iterator[fp.FaultProxy]:
    with fp.FaultProxy(scripted.base_url) as running:
        yield running


@pytest.fixture
def gateway(sock_dir: Path, proxy: fp.FaultProxy) -> Iterator[LLMGateway]:
    upstream = OpenAICompatibleUpstream(
        proxy.base_url, REAL_KEY, timeout=ATTEMPT_TIMEOUT_S, retry=FAST, rng=random.Random(7)
    )
    config = GatewayConfig(socket_path=sock_dir / "gw.sock", purpose="solve")
    with LLMGateway(config, upstream, PriceTable.default(), secrets=[REAL_KEY]) as running:
        yield running
    upstream.close()


def agent_client(gateway: LLMGateway, timeout: float = 30) -> openai.OpenAI:
    """The seed agent's client (it retries twice on its own), over the gateway's socket."""
    # The openai package's own httpx (a fork it ships): its transport reaches a unix socket.
    transport = httpx2.HTTPTransport(uds=str(gateway.config.socket_path))
    return openai.OpenAI(
        base_url="http://gateway/v1",
        api_key="clade-sandbox",
        max_retries=2,
        timeout=timeout,
        http_client=openai.DefaultHttpxClient(transport=transport),
    )


def call(gateway: LLMGateway, timeout: float = 30) -> Any:
    messages: Any = ask("hello")
    return agent_client(gateway, timeout).chat.completions.create(model="scripted", messages=messages)


RECOVERED = {
    "429 with Retry-After": fp.rate_limited("1"),
    "500": fp.openai_error(500, "The server had an error", "server_error"),
    "502 HTML page": fp.answer(502, "<html><title>502 Bad Gateway</title><h1>nginx</h1></html>", "text/html"),
    "503 plain text": fp.answer(503, "upstream connect error", "text/plain"),
    "connection reset": fp.reset(),
    "timeout": fp.hang(),
    "truncated body": fp.truncated(),
    "non-JSON 200": fp.non_json(),
    "200 with an error body": fp.answer(200, json.dumps({"error": {"message": "model is loading"}})),
}


@pytest.mark.parametrize("kind", list(RECOVERED))
def test_a_passing_fault_is_retried_and_the_call_answers(
    gateway: LLMGateway, proxy: fp.FaultProxy, kind: str
) -> None:
    proxy.plan(RECOVERED[kind])
    reply = call(gateway)
    assert reply.choices[0].message.content == "hi there"
    assert [s.fault for s in proxy.seen] == [RECOVERED[kind].kind, "pass"]
    (record,) = gateway.calls
    assert record.status == "ok" and record.attempts == 2
    if kind == "429 with Retry-After":
        assert record.retry_waits_s == [1.0]  # the server's wish, not the backoff
    else:
        assert len(record.retry_waits_s) == 1 and 0 <= record.retry_waits_s[0] <= FAST.backoff_s


GIVEN_UP = {
    # fault repeated on every attempt -> (status the agent gets, its error code)
    "503 every time": (fp.openai_error(503, "overloaded", "server_error", "overloaded"), 503, "overloaded"),
    "timeout every time": (fp.hang(), 504, "upstream_timeout"),
    "reset every time": (fp.reset(), 502, "upstream_unavailable"),
    "non-JSON every time": (fp.non_json(), 502, "upstream_invalid_response"),
}


@pytest.mark.parametrize("kind", list(GIVEN_UP))
def test_a_lasting_fault_is_tried_max_attempts_times_then_answered_with_its_code(
    gateway: LLMGateway, proxy: fp.FaultProxy, kind: str
) -> None:
    fault, status, code = GIVEN_UP[kind]
    proxy.plan(*[fault] * FAST.max_attempts)
    with pytest.raises(openai.APIStatusError) as caught:
        call(gateway)
    assert caught.value.status_code == status and caught.value.code == code
    # The agent's client did not retry on top of the gateway's retries (x-should-retry: false).
    assert len(proxy.seen) == FAST.max_attempts
    (record,) = gateway.calls
    assert (record.status, record.error_code, record.error_source) == ("error", code, "upstream")
    assert record.attempts == FAST.max_attempts and len(record.retry_waits_s) == FAST.max_attempts - 1


NOT_RETRIED = {
    # fault -> (status the agent gets, code, a part of its message)
    "context overflow (OpenAI)": (
        fp.context_overflow(),
        400,
        "context_length_exceeded",
        "maximum context length",
    ),
    "context overflow (llama.cpp)": (
        fp.answer(
            400,
            json.dumps(
                {
                    "error": {
                        "code": 400,
                        "message": "the request exceeds the available context size, try increasing it",
                        "type": "exceed_context_size_error",
                    }
                }
            ),
        ),
        400,
        "context_length_exceeded",
        "available context size",
    ),
    "context overflow (vLLM detail)": (
        fp.answer(400, json.dumps({"detail": "This model's maximum context length is 2048 tokens."})),
        400,
        "context_length_exceeded",
        "2048 tokens",
    ),
    '{"error": "text"}': (
        fp.answer(400, json.dumps({"error": "temperature out of range"})),
        400,
        None,
        "temperature",
    ),
    '{"detail": [...]}': (
        fp.answer(422, json.dumps({"detail": [{"loc": ["body", "messages"], "msg": "field required"}]})),
        422,
        None,
        "field required",
    ),
    "plain text 400": (
        fp.answer(400, "bad request: messages", "text/plain"),
        400,
        None,
        "bad request: messages",
    ),
    "429 quota spent": (
        fp.openai_error(429, "You exceeded your current quota", "insufficient_quota", "insufficient_quota"),
        429,
        "insufficient_quota",
        "current quota",
    ),
    "429 Retry-After over the cap": (fp.rate_limited("3600"), 429, "rate_limit_exceeded", "Rate limit"),
    "401 (our key)": (
        fp.openai_error(401, "Incorrect API key", "invalid_request_error", "invalid_api_key"),
        502,
        "invalid_api_key",
        "Incorrect API key",
    ),
}


@pytest.mark.parametrize("kind", list(NOT_RETRIED))
def test_a_fault_retrying_cannot_help_is_answered_at_once_with_the_upstreams_code(
    gateway: LLMGateway, proxy: fp.FaultProxy, kind: str
) -> None:
    fault, status, code, message = NOT_RETRIED[kind]
    proxy.plan(fault, fp.passthrough())
    with pytest.raises(openai.APIStatusError) as caught:
        call(gateway)
    error = caught.value
    assert error.status_code == status and error.code == code
    assert message in error.message and isinstance(error.body, dict)  # OpenAI-shaped: error.message
    assert len(proxy.seen) == 1
    (record,) = gateway.calls
    assert record.status == "error" and record.error_code == code and record.attempts == 1
    assert message in (record.error or "")
    if kind == "429 Retry-After over the cap":
        assert error.response.headers["retry-after"] == "3600"  # passed on: the agent may wait


def test_a_slow_reply_is_waited_for_not_retried(gateway: LLMGateway, proxy: fp.FaultProxy) -> None:
    release = threading.Event()
    proxy.plan(fp.slow(release))
    result: list[Any] = []
    caller = threading.Thread(target=lambda: result.append(call(gateway)), daemon=True)
    caller.start()
    proxy.wait_for_requests(1)
    release.set()  # the reply comes once the request has waited at the upstream
    caller.join(60)
    assert result and result[0].choices[0].message.content == "hi there"
    assert len(proxy.seen) == 1 and gateway.calls[0].attempts == 1


def test_no_retry_wait_runs_past_the_agents_own_timeout(gateway: LLMGateway, proxy: fp.FaultProxy) -> None:
    # The agent waits 5 s (its client says so in a header): a Retry-After of 10 s is not waited for.
    proxy.plan(fp.rate_limited("10"), fp.passthrough())
    with pytest.raises(openai.RateLimitError) as caught:
        call(gateway, timeout=5)
    assert caught.value.code == "rate_limit_exceeded"
    assert len(proxy.seen) == 1 and gateway.calls[0].attempts == 1


def test_a_stopping_gateway_makes_no_further_attempt(sock_dir: Path, proxy: fp.FaultProxy) -> None:
    upstream = OpenAICompatibleUpstream(proxy.base_url, REAL_KEY, timeout=10, retry=FAST)
    config = GatewayConfig(socket_path=sock_dir / "gw.sock", stop_grace_s=30)
    gateway = LLMGateway(config, upstream, PriceTable.default())
    gateway.start()
    proxy.plan(fp.rate_limited("15"), fp.passthrough())  # within the cap: it would wait 15 s
    caller = threading.Thread(target=_call_ignoring_errors, args=(gateway,), daemon=True)
    caller.start()
    proxy.wait_for_requests(1)
    gateway.stop()  # the sandbox is gone: the call ends with its last error, not after 15 s
    caller.join(30)
    upstream.close()
    assert not caller.is_alive()
    assert len(proxy.seen) == 1
    (record,) = gateway.calls
    assert record.status == "error" and record.error_code == "rate_limit_exceeded"


def _call_ignoring_errors(gateway: LLMGateway) -> None:
    # The gateway answers the error as it stops, or closes the connection: either is the point.
    with contextlib.suppress(openai.APIError, httpx2.TransportError):
        call(gateway)


def test_retries_stay_inside_the_lease(sock_dir: Path, proxy: fp.FaultProxy) -> None:
    # Failed attempts cost nothing and are not charged; the one that answers is metered once.
    upstream = OpenAICompatibleUpstream(proxy.base_url, REAL_KEY, timeout=10, retry=FAST)
    config = GatewayConfig(socket_path=sock_dir / "gw.sock", budget=Budget(run_remaining_usd=1.0))
    with LLMGateway(config, upstream, PriceTable.default()) as gateway:
        proxy.plan(fp.openai_error(503, "busy", "server_error"))
        call(gateway)
    upstream.close()
    (record,) = gateway.calls
    assert record.attempts == 2 and gateway.usage.calls == 1
    assert gateway.usage.prompt_tokens == record.prompt_tokens > 0


def ask_capped(gateway: LLMGateway, max_tokens: int, timeout: float = 30) -> Any:
    messages: Any = ask("hello")
    client = agent_client(gateway, timeout)
    return client.chat.completions.create(model="scripted", messages=messages, max_tokens=max_tokens)


def test_a_timed_out_try_is_counted_at_its_prompt_estimate_and_reply_limit(
    gateway: LLMGateway, proxy: fp.FaultProxy
) -> None:
    # The upstream got the first try and never answered: a provider may still bill it.
    proxy.plan(fp.passthrough())
    ask_capped(gateway, 50)  # an answered call first: its record is what one answer costs
    proxy.plan(fp.hang(), fp.passthrough())
    ask_capped(gateway, 50)
    answered, retried = gateway.calls
    assert (answered.unanswered_attempts, answered.usage_estimated) == (0, False)
    assert (retried.status, retried.attempts, retried.unanswered_attempts) == ("ok", 2, 1)
    assert retried.usage_estimated
    # One answer's tokens, plus the hung try at its bound: the prompt's estimate and the reply limit.
    assert retried.completion_tokens == answered.completion_tokens + 50
    assert retried.prompt_tokens > answered.prompt_tokens
    assert (retried.unanswered_prompt_tokens, retried.unanswered_completion_tokens) == (
        retried.prompt_tokens - answered.prompt_tokens,
        50,
    )
    assert retried.cost_usd > answered.cost_usd  # the hung try is charged at the model's price
    assert gateway.usage.total_tokens == answered.total_tokens + retried.total_tokens


def test_a_call_that_timed_out_every_time_is_counted_for_each_try(
    gateway: LLMGateway, proxy: fp.FaultProxy
) -> None:
    proxy.plan(*[fp.hang()] * FAST.max_attempts)
    with pytest.raises(openai.APIStatusError):
        ask_capped(gateway, 40)
    (record,) = gateway.calls
    assert (record.status, record.error_code) == ("error", "upstream_timeout")
    assert record.unanswered_attempts == FAST.max_attempts and record.usage_estimated
    assert record.completion_tokens == 40 * FAST.max_attempts
    assert record.prompt_tokens > 0 and record.prompt_tokens % FAST.max_attempts == 0


def test_a_call_in_flight_when_the_gateway_stops_is_recorded_at_its_bound(
    sock_dir: Path, proxy: fp.FaultProxy
) -> None:
    upstream = OpenAICompatibleUpstream(proxy.base_url, REAL_KEY, timeout=60, retry=FAST)
    config = GatewayConfig(socket_path=sock_dir / "gw.sock", stop_grace_s=0.2)
    gateway = LLMGateway(config, upstream, PriceTable.default())
    gateway.start()
    release = threading.Event()
    proxy.plan(fp.slow(release))
    caller = threading.Thread(target=_capped_ignoring_errors, args=(gateway, 30), daemon=True)
    caller.start()
    proxy.wait_for_requests(1)
    gateway.stop()  # the sandbox is gone while the upstream still works on the call
    (record,) = gateway.calls
    assert (record.status, record.error_code, record.error_source) == ("error", "call_abandoned", "gateway")
    assert record.usage_estimated and record.unanswered_attempts == 1
    assert record.completion_tokens == 30 and record.prompt_tokens > 0 and record.cost_usd > 0
    assert (record.unanswered_prompt_tokens, record.unanswered_completion_tokens) == (
        record.prompt_tokens,
        30,
    )
    # Its answer comes late: the call is not recorded (nor counted) a second time.
    release.set()
    caller.join(30)
    upstream.close()
    assert not caller.is_alive()
    assert [c.id for c in gateway.calls] == [record.id]
    assert gateway.chat.wait_idle(10)
    assert gateway.usage.total_tokens == record.total_tokens


def _capped_ignoring_errors(gateway: LLMGateway, max_tokens: int) -> None:
    with contextlib.suppress(openai.APIError, httpx2.TransportError):
        ask_capped(gateway, max_tokens)
