"""The upstream seam: one contract every upstream type meets, run against real servers."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from pydantic import SecretStr

from worker.llm.scripted import ScriptedServer
from worker.llm.upstream import (
    UPSTREAM_FACTORIES,
    UpstreamConfig,
    UpstreamHTTPError,
    UpstreamTimeout,
    UpstreamUnavailable,
    make_upstream,
)

from .support import REAL_KEY, ask, fix_script

pytestmark = pytest.mark.timeout(30)


@pytest.fixture(params=sorted(UPSTREAM_FACTORIES))
def upstream_type(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def config(upstream_type: str, base_url: str, key: str = REAL_KEY, timeout: float = 10) -> UpstreamConfig:
    return UpstreamConfig.model_validate(
        {"type": upstream_type, "base_url": base_url, "api_key": key, "timeout_s": timeout}
    )


def test_completes_and_lists_models(upstream_type: str, scripted: ScriptedServer) -> None:
    upstream = make_upstream(config(upstream_type, scripted.base_url))
    try:
        response = upstream.chat_completions({"model": "scripted", "messages": ask("hello")})
        assert response["choices"][0]["message"]["content"] == "hi there"
        assert [m["id"] for m in upstream.list_models()["data"]] == ["scripted-fixer"]
    finally:
        upstream.close()
    assert scripted.requests[0].authorization == f"Bearer {REAL_KEY}"


def test_http_errors_keep_status_and_message(upstream_type: str, scripted: ScriptedServer) -> None:
    upstream = make_upstream(config(upstream_type, scripted.base_url, key="wrong"))
    with pytest.raises(UpstreamHTTPError) as caught:
        upstream.chat_completions({"model": "scripted", "messages": ask("hello")})
    upstream.close()
    assert caught.value.status == 401
    assert "Incorrect API key" in caught.value.message
    assert caught.value.error_type == "invalid_request_error"


def test_unreachable_is_a_connection_error(upstream_type: str) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    upstream = make_upstream(config(upstream_type, f"http://127.0.0.1:{port}/v1"))
    with pytest.raises(UpstreamUnavailable) as caught:
        upstream.list_models()
    upstream.close()
    assert isinstance(caught.value, ConnectionError) and caught.value.status == 502


@pytest.fixture
def silent_port() -> Iterator[int]:
    """Accepts connections (kernel backlog) and never answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]


def test_timeout_is_a_timeout_error(upstream_type: str, silent_port: int) -> None:
    upstream = make_upstream(config(upstream_type, f"http://127.0.0.1:{silent_port}/v1", timeout=0.3))
    with pytest.raises(UpstreamTimeout) as caught:
        upstream.chat_completions({"model": "scripted", "messages": ask("hello")})
    upstream.close()
    assert isinstance(caught.value, TimeoutError) and caught.value.status == 504


def test_key_is_kept_secret_in_the_config() -> None:
    cfg = UpstreamConfig(base_url="http://x/v1", api_key=SecretStr(REAL_KEY))
    assert REAL_KEY not in repr(cfg) and REAL_KEY not in cfg.model_dump_json()


def test_scripted_server_without_key_accepts_any(upstream_type: str) -> None:
    with ScriptedServer(fix_script()) as open_server:
        upstream = make_upstream(config(upstream_type, open_server.base_url))
        assert upstream.chat_completions({"model": "scripted", "messages": ask("x")})["choices"]
        upstream.close()
