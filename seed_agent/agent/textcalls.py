"""Tool calls a model wrote as text in its message instead of in `tool_calls`.

Small and local models often do: llama.cpp's server without a tool-call grammar for the model,
or a chat template that does not know tools, hands back the JSON of the call as the content,
bare, in a Markdown code fence, or between `<tool_call>` tags (the Hermes/Qwen style). A call
is taken only if it names one of the tools the agent offered; anything else stays an answer.
"""

from __future__ import annotations

import json
import re
from typing import Any

_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_FENCED = re.compile(r"```(?:json|tool_call|tool)?\s*\n?(.*?)```", re.DOTALL)


def calls_in_text(content: str, tool_names: set[str]) -> list[tuple[str, str]]:
    """(name, arguments as JSON text) of each offered tool's call written in `content`."""
    for pieces in (_TAGGED.findall(content), _FENCED.findall(content), [content]):
        found = [call for piece in pieces for call in _calls(piece.strip(), tool_names)]
        if found:
            return found
    return []


def _calls(text: str, tool_names: set[str]) -> list[tuple[str, str]]:
    if not text.startswith(("{", "[")):
        return []
    try:
        data = json.loads(text)
    except ValueError:
        return []
    items = data if isinstance(data, list) else [data]
    calls = [_call(item) for item in items]
    return [call for call in calls if call is not None and call[0] in tool_names]


def _call(item: Any) -> tuple[str, str] | None:
    if not isinstance(item, dict):
        return None
    if isinstance(item.get("function"), dict):  # the wire shape, written out
        item = item["function"]
    name = item.get("name") or item.get("tool")
    arguments = next((item[k] for k in ("arguments", "parameters", "args", "input") if k in item), None)
    if not isinstance(name, str) or arguments is None:
        return None
    if isinstance(arguments, str):
        return name, arguments
    return name, json.dumps(arguments)
