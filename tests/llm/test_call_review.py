"""From a solve's metered calls to what its evaluation says: an upstream that failed every call is
an infrastructure failure naming its error; a model that never used an offered tool is a warning.
Calls go through the real gateway to the scripted model (a stand-in), behind the fault proxy."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from worker.call_review import NEVER_USED_A_TOOL, tool_warning, upstream_failure
from worker.llm.gateway import GatewayConfig, LLMGateway
from worker.llm.pricing import PriceTable
from worker.llm.retry import RetryPolicy
from worker.llm.scripted import ScriptedServer
from worker.llm.upstream import OpenAICompatibleUpstream

from . import fault_proxy as fp
from .support import REAL_KEY, ask
from .test_gateway import chat

pytestmark = pytest.mark.timeout(120)
BASH = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]


@pytest.fixture
def proxied(scripted: ScriptedServer, sock_dir: Path) -> Iterator[tuple[fp.FaultProxy, LLMGateway]]:
    with fp.FaultProxy(scripted.base_url) as proxy:
        policy = RetryPolicy(max_attempts=2, backoff_s=0.05)
        upstream = OpenAICompatibleUpstream(
            proxy.base_url, REAL_KEY, timeout=10, retry=policy, rng=random.Random(1)
        )
        config = GatewayConfig(socket_path=sock_dir / "gw.sock")
        with LLMGateway(config, upstream, PriceTable.default(), secrets=[REAL_KEY]) as gateway:
            yield proxy, gateway
        upstream.close()


def body(text: str, tools: bool = True) -> dict[str, Any]:
    return {"model": "scripted", "messages": ask(text), **({"tools": BASH} if tools else {})}


def test_an_upstream_that_failed_every_call_is_named_as_the_cause(
    proxied: tuple[fp.FaultProxy, LLMGateway],
) -> None:
    proxy, gateway = proxied
    proxy.plan(*[fp.openai_error(503, "The engine is overloaded", "server_error", "overloaded")] * 4)
    assert chat(gateway, body("hello")).status_code == 503
    assert chat(gateway, body("hello")).status_code == 503
    cause = upstream_failure(gateway.calls)
    assert cause is not None
    assert "failed every model call (2 of 2)" in cause and "HTTP 503, code overloaded" in cause
    assert "The engine is overloaded" in cause


def test_calls_that_answered_or_that_the_agent_got_wrong_are_no_infrastructure_failure(
    proxied: tuple[fp.FaultProxy, LLMGateway],
) -> None:
    proxy, gateway = proxied
    proxy.plan(fp.context_overflow())
    assert chat(gateway, body("hello")).status_code == 400  # the agent's prompt is too long
    assert upstream_failure(gateway.calls) is None
    proxy.plan(fp.openai_error(503, "busy", "server_error"), fp.openai_error(503, "busy", "server_error"))
    chat(gateway, body("hello"))
    chat(gateway, body("hello"))  # this one answers
    assert [c.status for c in gateway.calls] == ["error", "error", "ok"]
    assert upstream_failure(gateway.calls) is None


def test_a_model_that_never_returned_a_tool_call_is_warned_about(
    proxied: tuple[fp.FaultProxy, LLMGateway],
) -> None:
    _, gateway = proxied
    chat(gateway, body("hello"))  # the scripted model answers "hi there", no tool call
    chat(gateway, body("hello"))
    warning = tool_warning(gateway.calls)
    assert warning is not None and warning.startswith(NEVER_USED_A_TOOL)
    assert "2 answered calls offered tools" in warning


def test_no_warning_once_a_tool_was_called_or_when_none_was_offered(
    proxied: tuple[fp.FaultProxy, LLMGateway],
) -> None:
    _, gateway = proxied
    chat(gateway, body("hello", tools=False))
    assert tool_warning(gateway.calls) is None  # no tools offered: nothing to warn about
    system = "You are a coding agent."
    chat(gateway, {"model": "scripted", "messages": ask("fix the off-by-one", system), "tools": BASH})
    chat(gateway, body("hello"))
    assert gateway.calls[1].returned_tool_call
    assert tool_warning(gateway.calls) is None
