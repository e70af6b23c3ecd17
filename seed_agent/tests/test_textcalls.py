"""Tool calls a model wrote as text: the shapes local servers hand back."""

from __future__ import annotations

import json

import pytest
from agent.textcalls import calls_in_text

BASH = {"bash"}
ARGS = json.dumps({"command": "ls"})


@pytest.mark.parametrize(
    "content",
    [
        '{"name": "bash", "arguments": {"command": "ls"}}',
        '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>',
        'Let me look.\n```json\n{"name": "bash", "parameters": {"command": "ls"}}\n```',
        '[{"type": "function", "function": {"name": "bash", "arguments": "{\\"command\\": \\"ls\\"}"}}]',
    ],
)
def test_a_written_call_is_found(content: str) -> None:
    assert calls_in_text(content, BASH) == [("bash", ARGS)]


@pytest.mark.parametrize(
    "content",
    [
        "The fix is done.",
        '{"name": "python", "arguments": {"code": "1"}}',  # a tool it was not offered
        '{"name": "bash"}',  # no arguments
        "<tool_call>not json</tool_call>",
    ],
)
def test_anything_else_stays_an_answer(content: str) -> None:
    assert calls_in_text(content, BASH) == []
