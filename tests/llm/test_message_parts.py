"""Message content the lease cannot price is refused before it goes upstream.

A content part the upstream fetches or prices apart from its text (an image at a URL, audio,
a stored file) costs far more prompt tokens than its few characters of JSON, which is all the
gateway's estimate sees; and a URL makes the upstream fetch it for a sandbox that has no
network. Text parts, and images inline as data (estimated by their full size), still go.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from worker.llm.budget import Budget
from worker.llm.scripted import ScriptedServer

from .support import REAL_KEY
from .test_gateway import chat
from .test_request_guard import DEAR, dear_server, gateway_on

pytestmark = pytest.mark.timeout(30)
__all__ = ["dear_server"]  # the fixture, used by name

TEXT = {"type": "text", "text": "hello"}


@pytest.mark.parametrize(
    "part",
    [
        {"type": "image_url", "image_url": {"url": "https://example.invalid/a.png", "detail": "high"}},
        {"type": "image_url", "image_url": "https://example.invalid/a.png"},
        {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}},
        {"type": "file", "file": {"file_id": "file-abc"}},
        {"type": "clade_unknown"},
        "not a part",
    ],
)
def test_content_parts_the_lease_cannot_price_are_refused_naming_the_part(
    sock_dir: Path, dear_server: ScriptedServer, part: Any
) -> None:
    messages = [{"role": "system", "content": "x"}, {"role": "user", "content": [TEXT, part]}]
    with gateway_on(sock_dir, dear_server.base_url, REAL_KEY, Budget(), DEAR) as gateway:
        response = chat(gateway, {"model": "scripted", "messages": messages})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["param"] == "messages[1].content[1]"
    assert "messages[1].content[1]" in error["message"]
    assert dear_server.requests == []


def test_text_parts_and_inline_images_still_go(sock_dir: Path, dear_server: ScriptedServer) -> None:
    inline = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    messages = [{"role": "user", "content": [TEXT, inline]}]
    with gateway_on(sock_dir, dear_server.base_url, REAL_KEY, Budget(), DEAR) as gateway:
        response = chat(gateway, {"model": "scripted", "messages": messages})
    assert response.status_code == 200, response.text
    assert len(dear_server.requests) == 1
