"""What an upstream's error answer says, whatever its shape: message, type and code.

Servers that call themselves OpenAI-compatible disagree on errors: OpenAI and vLLM send
`{"error": {"message", "type", "code"}}`, llama.cpp's server the same with a number for a code,
LiteLLM and others `{"error": "text"}`, FastAPI apps `{"detail": ...}`, proxies a plain-text or
HTML page. One shape comes out, so that the agent and the call record see one code per fault:
a context overflow is `context_length_exceeded` whichever server said it, in whichever words.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass

CONTEXT_LENGTH_EXCEEDED = "context_length_exceeded"
# How servers other than OpenAI word a prompt that does not fit (vLLM, llama.cpp, TGI, Ollama).
_CONTEXT_WORDS = re.compile(
    r"maximum context length|context length|context size|context window|exceeds? the available context"
    r"|too many tokens|prompt is too long|input is too long",
    re.IGNORECASE,
)
_CONTEXT_TYPES = frozenset({"exceed_context_size_error", "context_length_exceeded"})
_TAG = re.compile(r"<[^>]*>")
_SPACE = re.compile(r"\s+")
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class ErrorBody:
    message: str
    error_type: str
    code: str | None


def parse_error_body(status: int, text: str, content_type: str = "") -> ErrorBody:
    """The error in `text` (an answer with HTTP `status`); never raises, whatever the body."""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        parsed = _from_json(status, data)
        if parsed is not None:
            return _normalised(parsed)
    return _normalised(
        ErrorBody(f"upstream HTTP {status}: {_plain(text, content_type)}", "upstream_error", None)
    )


def _from_json(status: int, data: dict[str, object]) -> ErrorBody | None:
    error = data.get("error")
    if isinstance(error, dict):
        message = error.get("message")
        text = message if isinstance(message, str) else json.dumps(error, default=str)
        return ErrorBody(
            f"upstream: {text}", _text(error.get("type")) or "upstream_error", _code(error, status)
        )
    if isinstance(error, str):
        return ErrorBody(
            f"upstream: {error}", _text(data.get("type")) or "upstream_error", _code(data, status)
        )
    for key in ("detail", "message"):
        value = data.get(key)
        if value is not None:
            text = value if isinstance(value, str) else json.dumps(value, default=str)
            return ErrorBody(
                f"upstream: {text}", _text(data.get("type")) or "upstream_error", _code(data, status)
            )
    return None


def _code(holder: dict[str, object], status: int) -> str | None:
    """The machine-readable code; a number that only repeats the HTTP status (llama.cpp) is none."""
    code = holder.get("code")
    if isinstance(code, bool) or code is None:
        return None
    if isinstance(code, int):
        return None if code == status else str(code)
    return _text(code) or None


def _normalised(body: ErrorBody) -> ErrorBody:
    if body.code is not None and body.code != "":
        return body
    if body.error_type in _CONTEXT_TYPES or _CONTEXT_WORDS.search(body.message):
        return ErrorBody(body.message, body.error_type, CONTEXT_LENGTH_EXCEEDED)
    return body


def _plain(text: str, content_type: str) -> str:
    """An HTML page as its title and text (a proxy's 502 page is mostly markup)."""
    if "html" not in content_type.lower() and not text.lstrip().startswith("<"):
        return text.strip() or "(empty body)"
    title = _TITLE.search(text)
    words = _SPACE.sub(" ", html.unescape(_TAG.sub(" ", text))).strip()
    if title is not None:
        name = _SPACE.sub(" ", html.unescape(title.group(1))).strip()
        return f"{name} (an HTML page: {words[:200]})" if name else words
    return words or "(an HTML page with no text)"


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
