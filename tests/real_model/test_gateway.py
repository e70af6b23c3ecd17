"""The gateway's metering against the real server: the tokens recorded are the ones the server
counted (its own /metrics counters, not only the reply it sent), a model declared at price 0 costs
$0 and is priced, and the record names the model that answered, beside the one the agent asked for."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from contracts.prices import ModelPrice, PriceTable
from tests.llm.support import ask, client, forwarder
from tests.real_model.llama import REPLY_CAP, LlamaServer
from tests.real_model.records import server_counts
from worker.llm.gateway import GatewayConfig, LLMGateway
from worker.llm.upstream import OpenAICompatibleUpstream

STORY = "Write a long story about a lighthouse."
BASH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a shell command in the repository",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    },
}


@pytest.fixture
def gateway(llama: LlamaServer) -> Iterator[LLMGateway]:
    folder = Path(tempfile.mkdtemp(prefix="clade-real-", dir="/tmp"))  # a unix socket path is short
    upstream = OpenAICompatibleUpstream(llama.base_url, "sk-local-unused", timeout=300)
    prices = PriceTable({llama.model: ModelPrice(prompt=0, completion=0)})  # a local server: declared free
    config = GatewayConfig(socket_path=folder / "gw.sock", model=llama.model, purpose="solve")
    gateway = LLMGateway(config, upstream, prices, secrets=("sk-local-unused",))
    gateway.start()
    try:
        yield gateway
    finally:
        gateway.stop()
        upstream.close()
        shutil.rmtree(folder, ignore_errors=True)


def test_metered_tokens_are_the_servers_own_and_cost_the_declared_zero(
    llama: LlamaServer, gateway: LLMGateway
) -> None:
    before = server_counts(llama)
    with forwarder(gateway.config.socket_path) as (_, port):
        llm = client(port).with_options(timeout=300)
        tools: Any = [BASH_TOOL]
        replies = [
            # No reply limit sent: the server's own cap (`--n-predict`) ends it.
            llm.chat.completions.create(model="gpt-4o", messages=cast(Any, ask(STORY))),
            llm.chat.completions.create(
                model="gpt-4o", messages=cast(Any, ask("Count to fifty.")), max_tokens=8
            ),
            llm.chat.completions.create(
                model="gpt-4o", messages=cast(Any, ask("List the files.")), tools=tools, tool_choice="auto"
            ),
        ]
    records = gateway.calls
    assert [r.status for r in records] == ["ok", "ok", "ok"]
    for reply, record in zip(replies, records, strict=True):
        assert reply.usage is not None
        assert (record.prompt_tokens, record.completion_tokens) == (
            reply.usage.prompt_tokens,
            reply.usage.completion_tokens,
        )
        assert record.prompt_tokens > 0 and record.completion_tokens > 0
        assert not record.usage_estimated
        # Asked for gpt-4o, pinned to the run's model: the answered name is recorded, priced at $0.
        assert (record.requested_model, record.model, reply.model) == ("gpt-4o", llama.model, llama.model)
        assert record.cost_usd == 0 and record.price_known
    assert records[0].completion_tokens <= REPLY_CAP
    assert records[1].completion_tokens <= 8
    # The prompt of the first call, counted by the server's own template and tokenizer.
    assert records[0].prompt_tokens == llama.count_prompt_tokens(
        ask("Write a long story about a lighthouse.")
    )

    # The server's counters move by exactly what was recorded (they are updated as each slot is
    # released, which may come just after its reply: polled, with a deadline).
    recorded = (sum(r.prompt_tokens for r in records), sum(r.completion_tokens for r in records))
    deadline = time.monotonic() + 30
    while (moved := tuple(a - b for a, b in zip(server_counts(llama), before, strict=True))) != recorded:
        assert time.monotonic() < deadline, f"the server counted {moved}, the gateway recorded {recorded}"
        time.sleep(0.2)
    usage = gateway.usage
    assert usage.ok_calls == 3 and usage.cost_usd == 0 and usage.unpriced_models == []
    assert usage.models == [llama.model]
