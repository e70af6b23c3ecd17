"""Fallback models: a call the primary model cannot answer goes to the next configured one.

Against the scripted server (a stand-in for a remote LLM, labelled scripted), which refuses
the names in its script's `refuse_models` with a 404 `model_not_found` as a real server does.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from worker.llm.budget import Budget
from worker.llm.fallback import FallbackChat, fallback_reason
from worker.llm.gateway import GatewayConfig, LLMGateway
from worker.llm.httpjson import openai_error
from worker.llm.metering import MeteredChat, Reply
from worker.llm.pricing import ModelPrice, PriceTable
from worker.llm.scripted import ScriptedServer
from worker.llm.upstream import OpenAICompatibleUpstream

from .support import REAL_KEY, ask, fix_script
from .test_gateway import chat

pytestmark = pytest.mark.timeout(30)

# Two scripted names at different prices, so a record priced as the wrong one shows.
PRICES = PriceTable(
    {
        "scripted-backup": ModelPrice(prompt=10.0, completion=20.0),
        "scripted*": ModelPrice(prompt=1.0, completion=2.0),
    }
)


@pytest.fixture
def refusing() -> Iterator[ScriptedServer]:
    script = fix_script().model_copy(update={"refuse_models": ["scripted-gone"]})
    with ScriptedServer(script, api_key=REAL_KEY) as server:
        yield server


@pytest.fixture
def gateway(refusing: ScriptedServer, sock_dir: Path) -> Iterator[LLMGateway]:
    upstream = OpenAICompatibleUpstream(refusing.base_url, REAL_KEY, timeout=10)
    config = GatewayConfig(
        socket_path=sock_dir / "gw.sock", model="scripted-gone", fallbacks=["scripted-backup"]
    )
    with LLMGateway(config, upstream, PRICES, secrets=[REAL_KEY]) as gw:
        yield gw
    upstream.close()


def test_a_refused_primary_falls_back_to_the_next_model(
    gateway: LLMGateway, refusing: ScriptedServer
) -> None:
    response = chat(gateway, {"model": "anything", "messages": ask("hello")})
    assert response.status_code == 200
    assert response.json()["choices"][0]["message"]["content"] == "hi there"
    assert [r.body["model"] for r in refusing.requests if isinstance(r.body, dict)] == [
        "scripted-gone",
        "scripted-backup",
    ]
    refused, answered = gateway.calls
    assert (refused.status, refused.http_status, refused.model) == ("error", 404, "scripted-gone")
    assert refused.route is not None and refused.route.why == "primary"
    assert answered.status == "ok" and answered.model == "scripted-backup"
    assert answered.route is not None and answered.route.why == "fallback"
    assert answered.route.after == "scripted-gone: 404 model_not_found"
    # Priced as the fallback model, at its own price.
    assert answered.cost_usd == pytest.approx(
        (answered.prompt_tokens * 10.0 + answered.completion_tokens * 20.0) / 1e6
    )


def test_a_missing_model_is_skipped_for_the_rest_of_the_job(
    gateway: LLMGateway, refusing: ScriptedServer
) -> None:
    chat(gateway, {"model": "x", "messages": ask("hello")})
    second = chat(gateway, {"model": "x", "messages": ask("hello")})
    assert second.status_code == 200
    asked = [r.body["model"] for r in refusing.requests if isinstance(r.body, dict)]
    assert asked == ["scripted-gone", "scripted-backup", "scripted-backup"]


def test_when_every_model_refuses_the_last_refusal_is_the_answer() -> None:
    script = fix_script().model_copy(update={"refuse_models": ["scripted-gone.*"]})
    with ScriptedServer(script, api_key=REAL_KEY) as server:
        upstream = OpenAICompatibleUpstream(server.base_url, REAL_KEY, timeout=10)
        metered = MeteredChat(upstream, PRICES, purpose="diagnose", budget=Budget(), pinned_model="x")
        reply = FallbackChat(metered, ["scripted-gone", "scripted-gone-too"]).complete(
            {"model": "x", "messages": ask("hello")}
        )
        upstream.close()
    assert reply.status == 404
    assert [(c.model, c.http_status) for c in metered.calls] == [
        ("scripted-gone", 404),
        ("scripted-gone-too", 404),
    ]
    assert metered.calls[1].route is not None and metered.calls[1].route.after == (
        "scripted-gone: 404 model_not_found"
    )


def test_a_spent_budget_never_falls_back(refusing: ScriptedServer) -> None:
    upstream = OpenAICompatibleUpstream(refusing.base_url, REAL_KEY, timeout=10)
    metered = MeteredChat(
        upstream, PRICES, purpose="solve", budget=Budget(run_remaining_tokens=1), pinned_model="scripted-a"
    )
    reply = FallbackChat(metered, ["scripted-a", "scripted-b"]).complete(
        {"model": "x", "messages": ask("hello")}
    )
    upstream.close()
    assert reply.status == 429 and reply.payload["error"]["type"] == "budget_exceeded"
    assert [c.status for c in metered.calls] == ["budget_exceeded"]
    assert refusing.requests == []


@pytest.mark.parametrize(
    ("status", "error_type", "code", "falls_back"),
    [
        (404, "invalid_request_error", None, True),  # the upstream's model not found
        (400, "invalid_request_error", "model_not_found", True),
        (429, "rate_limit_error", None, True),  # the upstream's, once its retries are spent
        (429, "budget_exceeded", "run_budget", False),  # the gateway's own
        (502, "upstream_error", None, True),  # unreachable, or 401/403 from the upstream
        (503, "upstream_error", None, True),
        (504, "upstream_timeout", None, True),
        (400, "invalid_request_error", "context_length_exceeded", False),
        (400, "invalid_request_error", "unsupported_field", False),
        (422, "invalid_request_error", None, False),
    ],
)
def test_which_errors_fall_back(status: int, error_type: str, code: str | None, falls_back: bool) -> None:
    reply = Reply(status, openai_error("no", error_type, code))
    assert (fallback_reason(reply) is not None) is falls_back
    assert fallback_reason(Reply(200, {"choices": []})) is None
