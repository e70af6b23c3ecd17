"""What the gateway forwards, holds and sends back, checked through its real unix socket.

Only allow-listed request fields go upstream (anything else is a 400 naming the field, and
nothing is sent); `n` replies are all held against the lease; every reply-limit key the agent
sent is held and capped; and the real key is cut out of upstream errors before they are
shortened, in every form a proxy might quote it, against a real local HTTP upstream that
echoes the Authorization header it received.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from worker.llm.budget import Budget
from worker.llm.gateway import GatewayConfig, LLMGateway
from worker.llm.pricing import ModelPrice, PriceTable
from worker.llm.request_fields import MAX_CHOICES
from worker.llm.script import Script
from worker.llm.scripted import ScriptedServer
from worker.llm.upstream import OpenAICompatibleUpstream

from .support import REAL_KEY, ask
from .test_gateway import chat, unix_client

pytestmark = pytest.mark.timeout(30)

DEAR = PriceTable({"scripted*": ModelPrice(prompt=500.0, completion=1000.0)})
LONG_REPLY = {"version": 1, "model": "scripted", "default": {"content": "word " * 400}}
# Long enough that a key cut anywhere keeps an 8-character run: the attack needs a real one.
LONG_KEY = "sk-proj-" + "Zq7" * 3 + "abcdefghijklmnopqrstuvwxyz0123456789/+=&"


def longest_run_of(key: str, text: str) -> int:
    """The longest run of consecutive characters of `key` that `text` contains."""
    best = 0
    for start in range(len(key)):
        for end in range(start + best + 1, len(key) + 1):
            if key[start:end] not in text:
                break
            best = end - start
    return best


@pytest.fixture
def dear_server() -> Iterator[ScriptedServer]:
    with ScriptedServer(Script.model_validate(LONG_REPLY), api_key=REAL_KEY) as server:
        yield server


def gateway_on(sock_dir: Path, server_url: str, key: str, budget: Budget, prices: PriceTable) -> LLMGateway:
    upstream = OpenAICompatibleUpstream(server_url, key, timeout=10)
    config = GatewayConfig(socket_path=sock_dir / "gw.sock", budget=budget)
    return LLMGateway(config, upstream, prices, secrets=(key,))


@pytest.mark.parametrize(
    "field, value",
    [
        ("service_tier", "priority"),
        ("web_search_options", {}),
        ("modalities", ["text", "audio"]),
        ("store", True),
        ("metadata", {"a": "b"}),
        ("prediction", {"type": "content", "content": "x"}),
        ("clade_anything", 1),
    ],
)
def test_fields_off_the_allow_list_are_refused_naming_the_field(
    sock_dir: Path, dear_server: ScriptedServer, field: str, value: Any
) -> None:
    with gateway_on(sock_dir, dear_server.base_url, REAL_KEY, Budget(), DEAR) as gateway:
        response = chat(gateway, {"model": "scripted", "messages": ask("hello"), field: value})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["param"] == field and error["code"] == "unsupported_field"
    assert f"does not forward the field {field!r}" in error["message"]
    assert dear_server.requests == []  # nothing went upstream
    (record,) = gateway.calls
    assert record.status == "error" and record.http_status == 400


@pytest.mark.parametrize(
    "field, value",
    [
        ("n", 0),
        ("n", MAX_CHOICES + 1),
        ("n", "5"),
        ("max_tokens", -1),
        ("max_tokens", 1e9),
        ("max_completion_tokens", "9"),
    ],
)
def test_bad_counts_are_refused_naming_the_field(
    sock_dir: Path, dear_server: ScriptedServer, field: str, value: Any
) -> None:
    with gateway_on(sock_dir, dear_server.base_url, REAL_KEY, Budget(), DEAR) as gateway:
        response = chat(gateway, {"model": "scripted", "messages": ask("hello"), field: value})
    assert response.status_code == 400 and response.json()["error"]["param"] == field
    assert dear_server.requests == []


def test_n_replies_are_all_held_against_the_lease(sock_dir: Path, dear_server: ScriptedServer) -> None:
    """n=5 on a lease that pays for one full reply: each of the 5 is cut so all 5 fit."""
    lease = 0.5  # a full reply of 400 words is about $0.4 at this price
    with gateway_on(
        sock_dir, dear_server.base_url, REAL_KEY, Budget(run_remaining_usd=lease), DEAR
    ) as gateway:
        response = chat(gateway, {"model": "scripted", "messages": ask("hello"), "n": 5})
    assert response.status_code == 200, response.text
    assert len(response.json()["choices"]) == 5  # the upstream really answered five times
    (call,) = gateway.calls
    assert call.cost_usd <= lease  # without holding n, this call would have cost about $2
    sent = dear_server.requests[0].body
    assert isinstance(sent, dict) and sent["n"] == 5
    assert 5 * sent["max_tokens"] * 1000.0 / 1e6 <= lease


def test_every_reply_limit_key_sent_is_held_and_capped(sock_dir: Path, dear_server: ScriptedServer) -> None:
    """A small max_tokens beside a huge max_completion_tokens (the one a server honours) cannot
    make the lease hold the small one: both go upstream at what the lease pays for."""
    lease = 0.1
    with gateway_on(
        sock_dir, dear_server.base_url, REAL_KEY, Budget(run_remaining_usd=lease), DEAR
    ) as gateway:
        body = {
            "model": "scripted",
            "messages": ask("hello"),
            "max_tokens": 10,
            "max_completion_tokens": 100_000,
        }
        response = chat(gateway, body)
    assert response.status_code == 200, response.text
    sent = dear_server.requests[0].body
    assert isinstance(sent, dict)
    assert sent["max_tokens"] == sent["max_completion_tokens"] < 100
    (call,) = gateway.calls
    assert call.cost_usd <= lease


class EchoingProxy:
    """A real HTTP upstream that fails every call with a page quoting the headers it got, as a
    misconfigured proxy does; `page` makes the body from the Authorization header."""

    def __init__(self, status: int, content_type: str, page: Any) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.answer()

            def do_GET(self) -> None:
                self.answer()

            def answer(self) -> None:
                body = page(self.headers.get("Authorization") or "").encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _html_cut_inside_the_key(auth: str) -> str:
    # The key starts a few characters before the old 500-character cut: a cut-then-redact
    # gateway sent its prefix back.
    return "<html><pre>" + "." * 440 + f"Authorization: {auth}</pre></html>"


PAGES = {
    "html cut inside the key": ("text/html", _html_cut_inside_the_key),
    "key prefix only": ("text/plain", lambda auth: f"bad token {auth[7 : 7 + 14]}..."),
    "url-encoded in a link": (
        "text/html",
        lambda auth: f"<a href='/login?token={quote(auth[7:], safe='')}'>retry</a>",
    ),
    "json-escaped, slashes too": (
        "application/json",
        lambda auth: json.dumps({"detail": f"bad header {auth}"}).replace("/", "\\/"),
    ),
}


@pytest.mark.parametrize("status", [401, 502])
@pytest.mark.parametrize("kind", list(PAGES))
def test_the_key_is_cut_out_of_upstream_errors_in_every_form(sock_dir: Path, kind: str, status: int) -> None:
    content_type, page = PAGES[kind]
    proxy = EchoingProxy(status, content_type, page)
    try:
        with gateway_on(sock_dir, proxy.url, LONG_KEY, Budget(), PriceTable.default()) as gateway:
            response = chat(gateway, {"model": "scripted", "messages": ask("hello")})
            with unix_client(gateway) as http:
                models = http.get("/models")
    finally:
        proxy.close()
    assert response.status_code == 502  # the upstream's complaint is about our key, not the agent's
    for answer in (
        response.text,
        models.text,
        json.dumps([c.model_dump(mode="json") for c in gateway.calls]),
    ):
        assert longest_run_of(LONG_KEY, answer) < 8, answer
    if content_type == "text/html":
        # An HTML page is answered as its text: markup (the link and its token) is dropped.
        assert "retry" in response.text or "Authorization: Bearer [redacted]" in response.text
    else:
        # What was redacted is still there to read, around the mark.
        assert "[redacted]" in response.text
