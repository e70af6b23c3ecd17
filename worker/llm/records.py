"""Records of LLM calls that outlive the gateway: sent to the service, shown in trajectories.

Messages are copied out of the OpenAI wire format into a small typed shape and
clipped to a size cap, because every call of a conversation repeats all the
earlier messages and an agent's tool output can be megabytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

LLM_RECORD_VERSION: Final = 1
DEFAULT_RECORD_CHARS = 16_000

CallStatus = Literal["ok", "error", "budget_exceeded"]


class RecordModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RecordedToolCall(RecordModel):
    id: str | None = None
    name: str
    arguments: str


class RecordedMessage(RecordModel):
    """One chat message as shown in the trajectory view; role `clade` marks gateway notes."""

    role: str
    content: str | None = None
    tool_calls: list[RecordedToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None

    @classmethod
    def from_openai(cls, raw: object) -> RecordedMessage:
        """Copy a wire message; the input is untrusted JSON, so odd shapes are kept as text."""
        if not isinstance(raw, dict):
            return cls(role="unknown", content=json.dumps(raw, default=str))
        return cls(
            role=str(raw.get("role", "unknown")),
            content=_content_text(raw.get("content")),
            tool_calls=[_tool_call(item) for item in _as_list(raw.get("tool_calls"))],
            tool_call_id=_opt_str(raw.get("tool_call_id")),
            name=_opt_str(raw.get("name")),
        )

    def size(self) -> int:
        calls = sum(len(c.arguments) + len(c.name) for c in self.tool_calls)
        return len(self.content or "") + calls


class CallRoute(RecordModel):
    """Which of a purpose's configured models a call was sent to, and why (worker/llm/fallback.py)."""

    model: str = Field(description="the configured model the call was sent to")
    why: Literal["primary", "fallback"]
    after: str | None = Field(default=None, description="a fallback: what the model before answered")


class LLMCall(RecordModel):
    """One chat completion that went through the gateway, refused ones included."""

    schema_version: Literal[1] = LLM_RECORD_VERSION
    id: str
    seq: int = Field(ge=0, description="order of arrival within one gateway")
    purpose: str
    model: str = Field(description="the model the call was made for (the run's, else the agent's); priced as")
    requested_model: str | None = Field(default=None, description="what the agent asked for")
    answered_model: str | None = Field(default=None, description="the name in the upstream's answer")
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    cached_prompt_tokens: int = Field(default=0, ge=0, description="part of prompt_tokens")
    reasoning_tokens: int = Field(default=0, ge=0, description="part of completion_tokens")
    cost_usd: float = Field(default=0.0, ge=0)
    price_known: bool = True
    usage_estimated: bool = Field(
        default=False, description="some of the tokens are the gateway's count, not the upstream's"
    )
    started_at: datetime
    duration_s: float = Field(ge=0)
    status: CallStatus
    http_status: int = 200
    error: str | None = None
    # Why a failed call failed, in machine-readable form: the upstream's own code where it sent one
    # (`context_length_exceeded`, `rate_limit_exceeded`), else the gateway's (`upstream_timeout`, ...).
    error_code: str | None = None
    error_type: str | None = None
    error_source: Literal["gateway", "upstream"] | None = Field(
        default=None, description="who failed the call: the gateway refused it, or the upstream"
    )
    upstream_status: int | None = Field(default=None, description="the HTTP status the upstream sent")
    attempts: int = Field(default=1, ge=1, description="tries sent upstream (retries included)")
    unanswered_attempts: int = Field(
        default=0,
        ge=0,
        description="tries the upstream got but never answered (timed out, or in flight when the sandbox"
        " stopped): each is counted at its prompt's estimate and its reply limit, and usage_estimated is set",
    )
    unanswered_prompt_tokens: int = Field(default=0, ge=0, description="part of prompt_tokens: those tries'")
    unanswered_completion_tokens: int = Field(
        default=0, ge=0, description="part of completion_tokens: those tries' reply limits"
    )
    retry_waits_s: list[float] = Field(default_factory=list, description="the waits before each retry")
    tools_offered: int = Field(default=0, ge=0, description="tools the request offered the model")
    request_messages: list[RecordedMessage] = Field(default_factory=list)
    response_message: RecordedMessage | None = None
    truncated: bool = False
    route: CallRoute | None = None  # set when the purpose has fallback models

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def returned_tool_call(self) -> bool:
        return self.response_message is not None and bool(self.response_message.tool_calls)


class UsageSummary(RecordModel):
    schema_version: Literal[1] = LLM_RECORD_VERSION
    calls: int = 0
    ok_calls: int = 0
    error_calls: int = 0
    budget_exceeded_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cost_usd: float = 0.0
    models: list[str] = Field(default_factory=list)
    unpriced_models: list[str] = Field(default_factory=list)
    estimated_usage_calls: int = 0

    @classmethod
    def of(cls, calls: Iterable[LLMCall]) -> UsageSummary:
        items = list(calls)
        prompt = sum(c.prompt_tokens for c in items)
        completion = sum(c.completion_tokens for c in items)
        metered = [c for c in items if c.status != "budget_exceeded"]
        return cls(
            calls=len(items),
            ok_calls=sum(c.status == "ok" for c in items),
            error_calls=sum(c.status == "error" for c in items),
            budget_exceeded_calls=sum(c.status == "budget_exceeded" for c in items),
            prompt_tokens=prompt,
            completion_tokens=completion,
            total_tokens=prompt + completion,
            cost_usd=sum(c.cost_usd for c in items),
            models=sorted({c.model for c in metered}),
            unpriced_models=sorted({c.model for c in metered if not c.price_known}),
            estimated_usage_calls=sum(c.usage_estimated for c in items),
        )


def record_messages(raw: object, max_chars: int = DEFAULT_RECORD_CHARS) -> tuple[list[RecordedMessage], bool]:
    """Typed copies of a request's messages within about `max_chars`; True if anything was cut.

    Long texts keep their head and tail; if that is not enough, the oldest
    messages after the first (usually the system prompt) are dropped, leaving a note.
    """
    messages = [RecordedMessage.from_openai(m) for m in _as_list(raw)]
    clipped = [clip_message(m, max(200, max_chars // 4)) for m in messages]
    truncated = any(c is not m for c, m in zip(clipped, messages, strict=True))
    dropped = 0
    while sum(m.size() for m in clipped) > max_chars and len(clipped) > 2:
        del clipped[1]
        dropped += 1
    if dropped:
        note = f"[{dropped} earlier messages omitted by the gateway's record size cap]"
        clipped.insert(1, RecordedMessage(role="clade", content=note))
    return clipped, truncated or dropped > 0


def clip_message(message: RecordedMessage, limit: int) -> RecordedMessage:
    """The same message if it fits, else a copy with long texts clipped (identity tells)."""
    content = None if message.content is None else _clip(message.content, limit)
    calls = [c.model_copy(update={"arguments": _clip(c.arguments, limit)}) for c in message.tool_calls]
    changed = content != message.content or any(
        new.arguments != old.arguments for new, old in zip(calls, message.tool_calls, strict=True)
    )
    if not changed:
        return message
    return message.model_copy(update={"content": content, "tool_calls": calls})


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n...[{cut} characters cut]...\n{text[-half:]}"


def _content_text(content: object) -> str | None:
    if content is None or isinstance(content, str):
        return content
    parts = []
    for part in _as_list(content):
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append(part["text"])
        elif isinstance(part, dict):
            parts.append(f"[{part.get('type', 'part')}]")
        else:
            parts.append(str(part))
    return "\n".join(parts)


def _tool_call(raw: object) -> RecordedToolCall:
    if not isinstance(raw, dict):
        return RecordedToolCall(name="?", arguments=json.dumps(raw, default=str))
    function = raw.get("function")
    fn = function if isinstance(function, dict) else {}
    arguments = fn.get("arguments", "")
    return RecordedToolCall(
        id=_opt_str(raw.get("id")),
        name=str(fn.get("name", "?")),
        arguments=arguments if isinstance(arguments, str) else json.dumps(arguments, default=str),
    )


def _as_list(value: object) -> list[object]:
    return list(value) if isinstance(value, list) else []


def _opt_str(value: object) -> str | None:
    return None if value is None else str(value)
