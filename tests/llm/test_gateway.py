"""The gateway on its unix socket, spoken to directly with httpx (no forwarder)."""

from __future__ import annotations

import contextlib
import json
import socket
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from worker.llm.budget import Budget
from worker.llm.gateway import GatewayConfig, GatewayError, LLMGateway
from worker.llm.pricing import PriceTable
from worker.llm.retry import CallBounds
from worker.llm.script import ScriptedModel
from worker.llm.scripted import ScriptedServer
from worker.llm.upstream import OpenAICompatibleUpstream

from .conftest import MakeGateway
from .support import REAL_KEY, ask, fix_script

pytestmark = pytest.mark.timeout(30)


def unix_client(gateway: LLMGateway) -> httpx.Client:
    transport = httpx.HTTPTransport(uds=str(gateway.config.socket_path))
    return httpx.Client(transport=transport, base_url="http://gateway/v1", timeout=10)


def chat(gateway: LLMGateway, body: Any, **headers: str) -> httpx.Response:
    with unix_client(gateway) as http:
        return http.post("/chat/completions", content=json.dumps(body), headers=headers)


def test_socket_is_connectable_by_another_uid(make_gateway: MakeGateway, sock_dir: Path) -> None:
    gateway = make_gateway(name="sub/dir/gw.sock")
    path = gateway.config.socket_path
    assert stat.S_ISSOCK(path.stat().st_mode)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o755


def test_agent_authorization_header_is_dropped(make_gateway: MakeGateway, scripted: ScriptedServer) -> None:
    gateway = make_gateway()
    response = chat(
        gateway, {"model": "scripted", "messages": ask("hello")}, authorization="Bearer agent-key"
    )
    assert response.status_code == 200
    assert [r.authorization for r in scripted.requests] == [f"Bearer {REAL_KEY}"]


def test_pinned_model_replaces_the_one_asked_for(make_gateway: MakeGateway, scripted: ScriptedServer) -> None:
    gateway = make_gateway(model="scripted-pinned")
    response = chat(gateway, {"model": "gpt-4o", "messages": ask("hello")})
    assert response.json()["model"] == "scripted-pinned"
    assert isinstance(scripted.requests[0].body, dict)
    assert scripted.requests[0].body["model"] == "scripted-pinned"
    (record,) = gateway.calls
    assert record.model == "scripted-pinned" and record.requested_model == "gpt-4o"
    # priced as what answered, not as the gpt-4o the agent asked for
    assert record.cost_usd == pytest.approx(
        (record.prompt_tokens * 1.0 + record.completion_tokens * 2.0) / 1e6
    )
    with unix_client(gateway) as http:
        models = http.get("/models").json()
    assert [m["id"] for m in models["data"]] == ["scripted-pinned"]


def test_models_are_listed_from_upstream_when_not_pinned(make_gateway: MakeGateway) -> None:
    gateway = make_gateway()
    with unix_client(gateway) as http:
        models = http.get("/models").json()
    assert [m["id"] for m in models["data"]] == ["scripted-fixer"]


@pytest.mark.parametrize(
    ("raw", "status", "needle"),
    [
        (b"{not json", 400, "not valid JSON"),
        (b"[1, 2]", 400, "JSON object"),
        (b'{"messages": []}', 400, "'model' is required"),
    ],
)
def test_bad_requests_get_openai_errors(
    make_gateway: MakeGateway, raw: bytes, status: int, needle: str
) -> None:
    gateway = make_gateway()
    with unix_client(gateway) as http:
        response = http.post("/chat/completions", content=raw)
    assert response.status_code == status
    assert needle in response.json()["error"]["message"]


def test_unknown_route_is_404_and_keep_alive_still_works(make_gateway: MakeGateway) -> None:
    gateway = make_gateway()
    with unix_client(gateway) as http:
        assert http.post("/embeddings", json={"input": "x"}).status_code == 404
        ok = http.post("/chat/completions", json={"model": "scripted", "messages": ask("hello")})
    assert ok.json()["choices"][0]["message"]["content"] == "hi there"


def test_oversized_request_is_refused(sock_dir: Path, upstream: OpenAICompatibleUpstream) -> None:
    config = GatewayConfig(socket_path=sock_dir / "gw.sock", max_request_bytes=2048)
    with LLMGateway(config, upstream, PriceTable.default()) as gateway:
        big = {"model": "scripted", "messages": ask("x" * 5000)}
        assert chat(gateway, big).status_code == 413


def test_unreachable_upstream_is_a_recorded_502(sock_dir: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dead = OpenAICompatibleUpstream(f"http://127.0.0.1:{port}/v1", REAL_KEY, timeout=5)
    config = GatewayConfig(socket_path=sock_dir / "gw.sock")
    with LLMGateway(config, dead, PriceTable.default()) as gateway:
        response = chat(gateway, {"model": "scripted", "messages": ask("hello")})
    assert response.status_code == 502
    assert response.json()["error"]["type"] == "upstream_error"
    (record,) = gateway.calls
    assert record.status == "error" and "unreachable" in (record.error or "")
    dead.close()


class NoUsageUpstream:
    """An in-process upstream that, like some local servers, reports no usage."""

    def __init__(self) -> None:
        self.model = ScriptedModel(fix_script())

    def chat_completions(self, body: dict[str, Any], bounds: CallBounds | None = None) -> dict[str, Any]:
        _, response = self.model.respond(body)
        del response["usage"]
        return response

    def list_models(self) -> dict[str, Any]:
        return {"object": "list", "data": []}

    def close(self) -> None:
        pass


def test_missing_usage_is_estimated_and_flagged(sock_dir: Path) -> None:
    config = GatewayConfig(socket_path=sock_dir / "gw.sock", budget=Budget(evaluation_tokens=5))
    with LLMGateway(config, NoUsageUpstream(), PriceTable.default()) as gateway:
        chat(gateway, {"model": "scripted", "messages": ask("hello")})
        refused = chat(gateway, {"model": "scripted", "messages": ask("hello")})
    first = gateway.calls[0]
    assert first.usage_estimated and first.prompt_tokens > 0 and first.completion_tokens > 0
    assert refused.status_code == 429  # estimated tokens still count against budgets
    assert gateway.usage.estimated_usage_calls == 1


def test_stop_is_prompt_with_an_idle_keep_alive_connection(make_gateway: MakeGateway) -> None:
    gateway = make_gateway()
    http = unix_client(gateway)
    http.post("/chat/completions", json={"model": "scripted", "messages": ask("hello")})
    started = time.monotonic()
    gateway.stop()
    assert time.monotonic() - started < 1.0
    assert not gateway.config.socket_path.exists()
    with pytest.raises(httpx.TransportError):
        http.post("/chat/completions", json={"model": "scripted", "messages": ask("hello")})
    http.close()


class SlowUpstream(NoUsageUpstream):
    def __init__(self, release: threading.Event) -> None:
        super().__init__()
        self.release = release

    def chat_completions(self, body: dict[str, Any], bounds: CallBounds | None = None) -> dict[str, Any]:
        self.release.wait(10)
        return super().chat_completions(body)


def test_stop_waits_for_a_call_in_flight_so_it_is_metered(sock_dir: Path) -> None:
    release = threading.Event()
    config = GatewayConfig(socket_path=sock_dir / "gw.sock", stop_grace_s=5)
    gateway = LLMGateway(config, SlowUpstream(release), PriceTable.default())
    gateway.start()
    caller = threading.Thread(target=lambda: _ignore_transport_errors(gateway), daemon=True)
    caller.start()
    deadline = time.monotonic() + 10
    while gateway.chat.in_flight == 0:
        assert time.monotonic() < deadline, "the call never reached the gateway"
        time.sleep(0.01)
    threading.Timer(0.3, release.set).start()
    gateway.stop()
    assert [r.status for r in gateway.calls] == ["ok"]


def _ignore_transport_errors(gateway: LLMGateway) -> None:
    # The gateway closes the connection while stopping; that is the point.
    with contextlib.suppress(httpx.TransportError):
        chat(gateway, {"model": "scripted", "messages": ask("hello")})


def test_long_socket_path_and_squatted_path_are_refused(
    sock_dir: Path, upstream: OpenAICompatibleUpstream
) -> None:
    long_path = sock_dir / ("x" * 120) / "gw.sock"
    with pytest.raises(GatewayError, match="longer than"):
        LLMGateway(GatewayConfig(socket_path=long_path), upstream, PriceTable.default()).start()
    squatted = sock_dir / "file.sock"
    squatted.write_text("not a socket")
    with pytest.raises(GatewayError, match="not a socket"):
        LLMGateway(GatewayConfig(socket_path=squatted), upstream, PriceTable.default()).start()


def test_stale_socket_is_replaced(make_gateway: MakeGateway, sock_dir: Path) -> None:
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(sock_dir / "gw.sock"))
    stale.close()  # the file stays behind, as after a crash
    gateway = make_gateway()
    assert chat(gateway, {"model": "scripted", "messages": ask("hello")}).status_code == 200


@pytest.fixture
def many_gateways(make_gateway: MakeGateway) -> Iterator[list[LLMGateway]]:
    yield [make_gateway(name=f"gw{i}.sock") for i in range(3)]


def test_gateways_for_different_sandboxes_meter_separately(
    many_gateways: list[LLMGateway],
) -> None:
    for i, gateway in enumerate(many_gateways):
        for _ in range(i + 1):
            chat(gateway, {"model": "scripted", "messages": ask("hello")})
    assert [g.usage.calls for g in many_gateways] == [1, 2, 3]


def test_connections_over_the_cap_are_closed(sock_dir: Path, upstream: OpenAICompatibleUpstream) -> None:
    config = GatewayConfig(socket_path=sock_dir / "gw.sock", max_connections=2)
    body = {"model": "scripted", "messages": ask("hello")}
    with LLMGateway(config, upstream, PriceTable.default()) as gateway:
        held = [unix_client(gateway) for _ in range(2)]
        for http in held:  # keep-alive: each holds its connection open
            assert http.post("/chat/completions", json=body).status_code == 200
        with pytest.raises(httpx.TransportError):
            chat(gateway, body)
        held.pop().close()
        deadline = time.monotonic() + 5
        while True:  # the freed slot is seen once its handler thread notices the close
            try:
                assert chat(gateway, body).status_code == 200
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline
                time.sleep(0.02)
        for http in held:
            http.close()
