"""The path an agent's call takes: openai client -> forwarder process -> unix socket -> gateway
-> scripted model server, all over real sockets and a real subprocess."""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import openai
import pytest

from worker.llm.budget import Budget
from worker.llm.pricing import ModelPrice, PriceTable
from worker.llm.scripted import ScriptedServer
from worker.llm.upstream import OpenAICompatibleUpstream

from .conftest import MakeGateway
from .support import DUMMY_KEY, REAL_KEY, ask, client, fix_script, forwarder

pytestmark = pytest.mark.timeout(60)


def test_multi_turn_tool_conversation_comes_back_as_scripted(make_gateway: MakeGateway) -> None:
    gateway = make_gateway()
    with forwarder(gateway.config.socket_path) as (_, port):
        llm = client(port)
        messages: list[Any] = ask("Fix the off-by-one in counter.py")
        first = llm.chat.completions.create(model="scripted-fixer", messages=messages)
        assert first.system_fingerprint == "clade-scripted"
        assert first.model == "scripted-fixer"
        assert first.choices[0].message.tool_calls
        call = first.choices[0].message.tool_calls[0]
        assert call.type == "function"
        assert call.function.name == "bash"
        assert json.loads(call.function.arguments) == {"command": "cat counter.py"}
        messages += [
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "for i in range(n - 1): ..."},
        ]
        second = llm.chat.completions.create(model="scripted-fixer", messages=messages)
        assert second.choices[0].message.tool_calls
        edit = second.choices[0].message.tool_calls[0]
        assert edit.type == "function"
        assert "sed -i" in edit.function.arguments
        messages += [
            second.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": edit.id, "content": ""},
        ]
        third = llm.chat.completions.create(model="scripted-fixer", messages=messages)
        assert third.choices[0].message.content == "Fixed: the loop now runs n times."
        assert third.choices[0].finish_reason == "stop"
    records = gateway.calls
    assert [r.status for r in records] == ["ok", "ok", "ok"]
    assert [r.seq for r in records] == [0, 1, 2]
    assert records[2].request_messages[-1].role == "tool"
    assert records[0].response_message is not None
    assert records[0].response_message.tool_calls[0].name == "bash"
    assert all(r.purpose == "solve" for r in records)


def test_tokens_and_cost_are_metered_as_the_price_table_says(make_gateway: MakeGateway) -> None:
    prices = PriceTable({"scripted*": ModelPrice(prompt=3.0, completion=7.0)})
    gateway = make_gateway(prices=prices)
    with forwarder(gateway.config.socket_path) as (_, port):
        responses = [
            client(port).chat.completions.create(model="scripted", messages=ask(text))  # type: ignore[arg-type]
            for text in ("hello", "Fix the off-by-one please")
        ]
    for response, record in zip(responses, gateway.calls, strict=True):
        assert response.usage is not None
        assert record.prompt_tokens == response.usage.prompt_tokens > 0
        assert record.completion_tokens == response.usage.completion_tokens > 0
        expected = (record.prompt_tokens * 3.0 + record.completion_tokens * 7.0) / 1_000_000
        assert record.cost_usd == pytest.approx(expected)
        assert record.price_known
    usage = gateway.usage
    assert usage.calls == usage.ok_calls == 2
    assert usage.total_tokens == sum(r.usage.total_tokens for r in responses if r.usage)
    assert usage.cost_usd == pytest.approx(sum(r.cost_usd for r in gateway.calls))
    assert usage.models == ["scripted"]
    assert usage.unpriced_models == []


def test_unpriced_model_costs_nothing_and_is_flagged(make_gateway: MakeGateway) -> None:
    gateway = make_gateway(prices=PriceTable({}))
    with forwarder(gateway.config.socket_path) as (_, port):
        client(port).chat.completions.create(model="scripted", messages=ask("hello"))  # type: ignore[arg-type]
    (record,) = gateway.calls
    assert record.status == "ok" and record.cost_usd == 0 and not record.price_known
    assert gateway.usage.unpriced_models == ["scripted"]


def test_real_key_reaches_upstream_and_dummy_key_never_does(
    make_gateway: MakeGateway, scripted: ScriptedServer
) -> None:
    gateway = make_gateway()
    with forwarder(gateway.config.socket_path) as (_, port):
        raw = client(port).chat.completions.with_raw_response.create(
            model="scripted",
            messages=ask("hello"),  # type: ignore[arg-type]
        )
    assert [r.authorization for r in scripted.requests] == [f"Bearer {REAL_KEY}"]
    assert all(DUMMY_KEY not in json.dumps(r.body) for r in scripted.requests)
    agent_side = raw.http_response.text + json.dumps(dict(raw.headers))
    assert REAL_KEY not in agent_side
    assert raw.parse().choices[0].message.content == "hi there"


def test_upstream_error_quoting_the_real_key_is_redacted(make_gateway: MakeGateway) -> None:
    # This upstream rejects the gateway's key and quotes it back, as some providers do.
    with ScriptedServer(fix_script(), api_key="some-other-key") as picky:
        upstream = OpenAICompatibleUpstream(picky.base_url, REAL_KEY, timeout=10)
        gateway = make_gateway(up=upstream)
        with (
            forwarder(gateway.config.socket_path) as (_, port),
            pytest.raises(openai.APIStatusError) as caught,
        ):
            client(port).chat.completions.create(model="scripted", messages=ask("hello"))  # type: ignore[arg-type]
        upstream.close()
    assert caught.value.status_code == 502  # the gateway's key failed, not the agent's
    assert REAL_KEY not in caught.value.response.text
    assert "[redacted]" in caught.value.response.text
    (record,) = gateway.calls
    assert record.status == "error" and record.http_status == 502
    assert REAL_KEY not in (record.error or "")


def _budget_error(port: int) -> openai.RateLimitError:
    with pytest.raises(openai.RateLimitError) as caught:
        client(port).chat.completions.create(model="scripted", messages=ask("hello"))  # type: ignore[arg-type]
    return caught.value


def test_evaluation_token_budget_refuses_further_calls_clearly(
    make_gateway: MakeGateway, scripted: ScriptedServer
) -> None:
    gateway = make_gateway(budget=Budget(evaluation_tokens=10))
    with forwarder(gateway.config.socket_path) as (_, port):
        first = client(port).chat.completions.create(model="scripted", messages=ask("hello"))  # type: ignore[arg-type]
        assert first.usage is not None and first.usage.total_tokens >= 10
        error = _budget_error(port)
    body = error.response.json()["error"]
    assert error.status_code == 429
    assert body["type"] == "budget_exceeded"
    assert body["code"] == "evaluation_tokens"
    used = first.usage.total_tokens
    assert body["message"] == (f"per-evaluation token budget exhausted: used {used} of 10 tokens")
    assert len(scripted.requests) == 1  # the refused call never reached the upstream
    assert [r.status for r in gateway.calls] == ["ok", "budget_exceeded"]
    refused = gateway.calls[1]
    assert refused.http_status == 429 and refused.error == body["message"]
    assert refused.prompt_tokens == refused.completion_tokens == 0
    assert gateway.usage.budget_exceeded_calls == 1


def test_evaluation_usd_budget(make_gateway: MakeGateway) -> None:
    gateway = make_gateway(budget=Budget(evaluation_usd=0.00001))
    with forwarder(gateway.config.socket_path) as (_, port):
        for _ in range(100):  # the scripted price is $1 / $2 per million tokens
            try:
                client(port).chat.completions.create(model="scripted", messages=ask("hello"))  # type: ignore[arg-type]
            except openai.RateLimitError as exc:
                assert exc.response.json()["error"]["code"] == "evaluation_usd"
                assert "per-evaluation budget exhausted: spent $" in str(exc)
                break
        else:
            pytest.fail("the USD budget never ran out")
    ok = [r for r in gateway.calls if r.status == "ok"]
    spent_before_last = sum(r.cost_usd for r in ok[:-1])
    assert spent_before_last < 0.00001 <= sum(r.cost_usd for r in ok)


def test_run_budget_refuses_with_its_own_message(make_gateway: MakeGateway) -> None:
    gateway = make_gateway(budget=Budget(evaluation_usd=10.0, run_remaining_usd=0.0))
    with forwarder(gateway.config.socket_path) as (_, port):
        error = _budget_error(port)
    body = error.response.json()["error"]
    assert body["code"] == "run_usd"
    assert "run budget exhausted" in body["message"] and "leased of the run's budget" in body["message"]
    assert [r.status for r in gateway.calls] == ["budget_exceeded"]


def test_run_token_budget(make_gateway: MakeGateway, scripted: ScriptedServer) -> None:
    """A lease too small for the prompt alone is refused before anything goes upstream."""
    gateway = make_gateway(budget=Budget(run_remaining_tokens=20))
    with forwarder(gateway.config.socket_path) as (_, port):
        error = _budget_error(port)
    body = error.response.json()["error"]
    assert body["code"] == "run_tokens"
    assert "lease of 20 tokens of the run's budget has 20 tokens left" in body["message"]
    assert scripted.requests == []


def test_stream_is_refused_clearly(make_gateway: MakeGateway, scripted: ScriptedServer) -> None:
    gateway = make_gateway()
    with (
        forwarder(gateway.config.socket_path) as (_, port),
        pytest.raises(openai.BadRequestError) as caught,
    ):
        client(port).chat.completions.create(
            model="scripted",
            messages=ask("hello"),  # type: ignore[arg-type]
            stream=True,
        )
    error = caught.value.response.json()["error"]
    assert error["code"] == "stream_unsupported"
    assert "streaming is not supported" in error["message"]
    assert scripted.requests == []
    assert [(r.status, r.http_status) for r in gateway.calls] == [("error", 400)]


def test_concurrent_calls_are_counted_exactly(make_gateway: MakeGateway) -> None:
    gateway = make_gateway()
    n_workers, per_worker = 12, 5

    with forwarder(gateway.config.socket_path) as (_, port):

        def work(i: int) -> list[int]:
            llm = client(port)  # one connection pool per simulated agent
            totals = []
            for j in range(per_worker):
                text = "hello" if (i + j) % 2 else "Fix the off-by-one"
                r = llm.chat.completions.create(model="scripted", messages=ask(text))  # type: ignore[arg-type]
                assert r.usage is not None
                totals.append(r.usage.total_tokens)
            return totals

        with ThreadPoolExecutor(n_workers) as pool:
            seen = [t for totals in pool.map(work, range(n_workers)) for t in totals]
    usage = gateway.usage
    assert usage.calls == usage.ok_calls == n_workers * per_worker
    assert usage.total_tokens == sum(seen)
    assert sorted(r.seq for r in gateway.calls) == list(range(n_workers * per_worker))
    assert len({r.id for r in gateway.calls}) == n_workers * per_worker


SYSTEM_PYTHON = Path("/usr/bin/python3")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run the forwarder as uid 1000")
@pytest.mark.skipif(not SYSTEM_PYTHON.exists(), reason="needs a python3 that uid 1000 can run")
def test_the_sandbox_user_uid_1000_can_use_the_socket(make_gateway: MakeGateway, sock_dir: Path) -> None:
    sock_dir.chmod(0o755)  # as the worker's mount of the socket's folder would be
    gateway = make_gateway(name="llm/gateway.sock")
    with forwarder(gateway.config.socket_path, python=str(SYSTEM_PYTHON), user=1000) as (_, port):
        response = client(port).chat.completions.create(model="scripted", messages=ask("hello"))  # type: ignore[arg-type]
    assert response.choices[0].message.content == "hi there"
