"""A job's lease on the run's budget: the gateway never lets calls cross it.

The per-evaluation limits let the crossing call through; a lease does not, so that jobs in
parallel, each on its own lease, cannot together spend more than the run had left.
"""

from __future__ import annotations

import threading
from typing import Any

from worker.llm.budget import Budget
from worker.llm.metering import MeteredChat
from worker.llm.pricing import ModelPrice, PriceTable
from worker.llm.script import Script
from worker.llm.scripted import ScriptedServer
from worker.llm.upstream import OpenAICompatibleUpstream

from .support import REAL_KEY, ask

# Dear enough that a few calls spend a lease: about $0.02 to $0.1 a call.
DEAR = PriceTable({"scripted*": ModelPrice(prompt=500.0, completion=1000.0)})
LONG_REPLY = {"version": 1, "model": "scripted", "default": {"content": "word " * 200}}


def _chat(server: ScriptedServer, budget: Budget) -> tuple[MeteredChat, OpenAICompatibleUpstream]:
    upstream = OpenAICompatibleUpstream(server.base_url, REAL_KEY, timeout=10)
    return MeteredChat(upstream, DEAR, purpose="solve", budget=budget, secrets=(REAL_KEY,)), upstream


def _call(chat: MeteredChat, **extra: Any) -> int:
    return chat.complete({"model": "scripted", "messages": ask("hello"), **extra}).status


def _body(server: ScriptedServer, index: int) -> dict[str, Any]:
    body = server.requests[index].body
    assert isinstance(body, dict)
    return body


def _script_server() -> ScriptedServer:
    return ScriptedServer(Script.model_validate(LONG_REPLY), api_key=REAL_KEY)


def test_calls_stop_within_the_lease_and_the_last_reply_is_shortened() -> None:
    lease = 1.0  # a full call costs about $0.26
    with _script_server() as server:
        chat, upstream = _chat(server, Budget(run_remaining_usd=lease))
        statuses = [_call(chat) for _ in range(20)]
        upstream.close()
    answered = statuses.count(200)
    assert answered >= 4 and statuses == [200] * answered + [429] * (20 - answered)
    ok = [c for c in chat.calls if c.status == "ok"]
    spent = sum(c.cost_usd for c in ok)
    assert spent <= lease  # never crossed, not even by the last call
    full, last = ok[0], ok[-1]
    assert last.completion_tokens < full.completion_tokens  # cut to what the lease could pay
    # The request went upstream with the max_tokens the lease had left, and the reply stopped there.
    assert _body(server, -1)["max_tokens"] == last.completion_tokens
    refused = chat.calls[-1]
    assert refused.status == "budget_exceeded" and "lease of $1.000000" in (refused.error or "")


def test_the_agents_own_max_tokens_is_kept_when_the_lease_pays_for_it() -> None:
    with _script_server() as server:
        chat, upstream = _chat(server, Budget(run_remaining_usd=10.0))
        assert _call(chat, max_tokens=7) == 200
        assert _call(chat, max_completion_tokens=9) == 200
        upstream.close()
    # Under every reply-limit key, whichever the agent used: a server may honour only one.
    assert [_body(server, i).get("max_tokens") for i in (0, 1)] == [7, 9]
    assert [_body(server, i).get("max_completion_tokens") for i in (0, 1)] == [7, 9]
    assert [c.completion_tokens for c in chat.calls] == [7, 9]


def test_calls_in_flight_together_cannot_cross_the_lease_together() -> None:
    lease_usd, lease_tokens = 1.0, 3000
    with _script_server() as server:
        chat, upstream = _chat(server, Budget(run_remaining_usd=lease_usd, run_remaining_tokens=lease_tokens))
        statuses: list[int] = []
        lock = threading.Lock()

        def agent() -> None:
            for _ in range(15):
                status = _call(chat)
                with lock:
                    statuses.append(status)

        threads = [threading.Thread(target=agent) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        upstream.close()
    assert 429 in statuses and statuses.count(200) >= 4
    ok = [c for c in chat.calls if c.status == "ok"]
    assert sum(c.cost_usd for c in ok) <= lease_usd
    assert sum(c.prompt_tokens + c.completion_tokens for c in ok) <= lease_tokens
