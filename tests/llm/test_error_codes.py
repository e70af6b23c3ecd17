"""Issue 20, defect 5: the upstream's error code (`context_length_exceeded`) was dropped on the way
back to the agent and from the call record. The fault proxy answers as OpenAI does, in front of
the scripted model (a stand-in); only APIs older than the fix are used, so this fails before it."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from worker.llm.gateway import GatewayConfig, LLMGateway
from worker.llm.pricing import PriceTable
from worker.llm.scripted import ScriptedServer
from worker.llm.upstream import OpenAICompatibleUpstream

from . import fault_proxy as fp
from .support import REAL_KEY, ask

pytestmark = pytest.mark.timeout(60)


def test_context_overflow_keeps_the_upstreams_code_for_the_agent_and_the_record(
    scripted: ScriptedServer, sock_dir: Path
) -> None:
    """Issue 20, defect 5: the upstream's `context_length_exceeded` was dropped on the way back."""
    with fp.FaultProxy(scripted.base_url) as proxy:
        proxy.plan(fp.context_overflow())
        upstream = OpenAICompatibleUpstream(proxy.base_url, REAL_KEY, timeout=10)
        config = GatewayConfig(socket_path=sock_dir / "gw.sock")
        with LLMGateway(config, upstream, PriceTable.default(), secrets=[REAL_KEY]) as gateway:
            transport = httpx.HTTPTransport(uds=str(config.socket_path))
            with httpx.Client(transport=transport, base_url="http://gateway/v1", timeout=10) as http:
                response = http.post(
                    "/chat/completions", json={"model": "scripted", "messages": ask("hello")}
                )
        upstream.close()
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "context_length_exceeded"
    (record,) = gateway.calls
    assert record.model_dump()["error_code"] == "context_length_exceeded"
