"""Which fields of an agent's chat-completion request the gateway forwards, and how many
replies (and of what length) a request may cost.

The gateway forwards an allow-list, not the agent's body: a field the lease cannot see the
price of (`service_tier` priced higher, `web_search_options` billed per search, audio
`modalities` priced per audio token, `store`, `metadata`, `prediction`) or that it does not
know is refused with a 400 naming it, before anything goes upstream. `n` is allowed up to
MAX_CHOICES and every one of its replies is held against the lease; the reply-limit keys
(`max_tokens`, `max_completion_tokens`) must be positive integers, and the largest one sent
is the reply's worst case. A message's content parts must be text, or an image inline as data:
a part priced or fetched upstream apart from its JSON (an image URL, audio, a file) is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

FORWARDED_FIELDS = frozenset(
    {
        "model",
        "messages",
        "max_tokens",
        "max_completion_tokens",
        "n",
        "temperature",
        "top_p",
        "stop",
        "seed",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "response_format",
        "reasoning_effort",
        "user",
        "stream",  # only `false`: streaming is refused on its own
    }
)
# The keys a reply limit is sent under. Not llama.cpp's own `n_predict`: its OpenAI endpoint maps
# `max_tokens` to it, and OpenAI refuses a field it does not know.
REPLY_LIMIT_KEYS = ("max_completion_tokens", "max_tokens")
MAX_CHOICES = 8


@dataclass(frozen=True)
class RequestShape:
    """What a valid request may cost: `choices` replies of at most `reply_tokens` each (None:
    the agent set no reply limit)."""

    choices: int
    reply_tokens: int | None


@dataclass(frozen=True)
class FieldRefusal:
    field: str
    message: str


def check_request(body: dict[str, Any]) -> RequestShape | FieldRefusal:
    """The request's shape, or why the gateway refuses it (the first offending field)."""
    unknown = sorted(key for key in body if key not in FORWARDED_FIELDS)
    if unknown:
        listed = ", ".join(sorted(FORWARDED_FIELDS))
        return FieldRefusal(
            unknown[0],
            f"the Clade LLM gateway does not forward the field {unknown[0]!r} (it forwards only: {listed})",
        )
    refused_part = _unpriced_part(body.get("messages"))
    if refused_part is not None:
        return refused_part
    caps: list[int] = []
    for key in REPLY_LIMIT_KEYS:
        value = body.get(key)
        if value is None:
            continue
        if not _positive_int(value):
            return FieldRefusal(key, f"{key!r} must be a positive integer, not {value!r}")
        caps.append(value)
    choices = body.get("n", 1)
    if choices is None:
        choices = 1
    if not _positive_int(choices) or choices > MAX_CHOICES:
        return FieldRefusal("n", f"'n' must be an integer from 1 to {MAX_CHOICES}, not {choices!r}")
    return RequestShape(choices=choices, reply_tokens=max(caps) if caps else None)


def refused_reply_key(status: int, message: str, sent: list[str]) -> str | None:
    """The reply-limit key an upstream's 400 refuses, when more than one was sent (so one is left):
    the key its message names, `max_tokens` when it names both (OpenAI: "Setting 'max_tokens' and
    'max_completion_tokens' at the same time is not supported", "Unsupported parameter: 'max_tokens'
    ... Use 'max_completion_tokens' instead"); None for any other error."""
    if status not in (400, 422) or len(sent) < 2:
        return None
    named = [key for key in sent if key in message]
    if len(named) > 1:
        return "max_tokens" if "max_tokens" in named else named[0]
    return named[0] if named else None


def _unpriced_part(messages: object) -> FieldRefusal | None:
    """The first content part the prompt estimate cannot see the cost of: anything but text or
    an image inline as data (an image at a URL, audio, a stored file are priced, and fetched,
    upstream, whatever their few characters of JSON)."""
    if not isinstance(messages, list):
        return None  # the upstream answers a malformed `messages` itself
    for i, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for j, part in enumerate(content):
            if not _priced_part(part):
                where = f"messages[{i}].content[{j}]"
                kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                return FieldRefusal(
                    where,
                    f"the Clade LLM gateway does not forward {where} ({str(kind)[:40]!r}): a content"
                    " part must be text or an image inline as a data: URL",
                )
    return None


def _priced_part(part: object) -> bool:
    if not isinstance(part, dict):
        return False
    if part.get("type") == "text":
        return True
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, dict) else None
    return part.get("type") == "image_url" and isinstance(url, str) and url.startswith("data:")


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0
