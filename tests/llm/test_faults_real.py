"""The fault proxy in front of a REAL model server: llama.cpp's llama-server with SmolLM2-135M
(built by scripts/llama-server.sh into /opt/clade-llama), started here on 127.0.0.1, port 0.

What is checked is what the real server itself sends: its context overflow (a 400 with
`exceed_context_size_error` and a number for a code) reaches the agent as
`context_length_exceeded`; faults in front of it are retried and the real answer is metered with
the server's own usage and the name it answered with (it echoes its model file's path).
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.real_model.llama import installed
from worker.llm.gateway import GatewayConfig, LLMGateway
from worker.llm.pricing import PriceTable
from worker.llm.retry import RetryPolicy
from worker.llm.upstream import OpenAICompatibleUpstream

from . import fault_proxy as fp

CONTEXT = 2048
START_DEADLINE_S = 180.0  # loading the model on a busy machine

# Part of the real-model tier: a missing server is an error naming scripts/llama-server.sh, never a skip.
pytestmark = [pytest.mark.timeout(600), pytest.mark.real_model]


def chat(gateway: LLMGateway, body: dict[str, Any]) -> httpx.Response:
    # A real model on a busy machine: minutes, not the scripted model's seconds.
    transport = httpx.HTTPTransport(uds=str(gateway.config.socket_path))
    with httpx.Client(transport=transport, base_url="http://gateway/v1", timeout=300) as http:
        return http.post("/chat/completions", json=body)


@pytest.fixture(scope="module")
def llama_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server, model = installed()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [
                str(server),
                "-m",
                str(model),
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "-c",
                str(CONTEXT),
                "-n",
                "32",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + START_DEADLINE_S
        while not (found := re.search(r"listening on (http://127\.0\.0\.1:\d+)", log.read_text())):
            assert proc.poll() is None, f"llama-server exited: {log.read_text()[-2000:]}"
            assert time.monotonic() < deadline, f"llama-server did not start: {log.read_text()[-2000:]}"
            time.sleep(0.2)
        yield found.group(1) + "/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_the_real_servers_faults_and_the_proxys_reach_the_agent_as_one_code(
    llama_url: str, sock_dir: Path
) -> None:
    with fp.FaultProxy(llama_url) as proxy:
        upstream = OpenAICompatibleUpstream(
            proxy.base_url, None, timeout=300, retry=RetryPolicy(backoff_s=0.1)
        )
        config = GatewayConfig(socket_path=sock_dir / "gw.sock")
        with LLMGateway(config, upstream, PriceTable.default()) as gateway:
            proxy.plan(fp.openai_error(503, "busy", "server_error"), fp.truncated())
            hello = [{"role": "user", "content": "Say hi."}]
            ok = chat(gateway, {"model": "smollm2", "messages": hello, "max_tokens": 8})
            overflow = chat(
                gateway, {"model": "smollm2", "messages": [{"role": "user", "content": "word " * 4000}]}
            )
        upstream.close()
    assert ok.status_code == 200, ok.text
    assert overflow.status_code == 400 and overflow.json()["error"]["code"] == "context_length_exceeded"
    answered, failed = gateway.calls
    assert answered.attempts == 3 and answered.status == "ok"
    usage = ok.json()["usage"]
    assert (answered.prompt_tokens, answered.completion_tokens) == (
        usage["prompt_tokens"],
        usage["completion_tokens"],
    )
    assert answered.requested_model == "smollm2" and answered.answered_model == ok.json()["model"]
    assert failed.error_code == "context_length_exceeded" and failed.upstream_status == 400
    assert "exceeds the available context size" in (failed.error or "")
