"""The model client: one chat-completions call to an OpenAI-compatible endpoint."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import openai

from agent.textcalls import calls_in_text

Message = dict[str, Any]
BUDGET_EXCEEDED = "budget_exceeded"
# Every call says how long a reply may be: without it a server writes to its own limit (a local
# one to the end of its context), and a budgeted gateway must hold the call at its largest.
REPLY_TOKENS = 4096


class ModelError(Exception):
    """The endpoint refused or failed a call; `type` and `code` are its machine-readable kind."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        type: str | None = None,
        code: str | None = None,
    ):
        super().__init__(message)
        self.status, self.type, self.code = status, type, code

    @property
    def budget_exceeded(self) -> bool:
        # Clade's gateway answers 429 with error type "budget_exceeded" once a budget is spent.
        return BUDGET_EXCEEDED in (self.type, self.code)


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text, exactly as the model wrote it

    def as_message_part(self) -> Message:
        function = {"name": self.name, "arguments": self.arguments}
        return {"id": self.id, "type": "function", "function": function}


@dataclass
class Reply:
    message: Message  # the assistant message, ready to append to the conversation
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)


class ModelClient(Protocol):
    def query(self, messages: list[Message], *, timeout_s: float) -> Reply: ...


class OpenAIModel:
    def __init__(
        self,
        name: str,
        *,
        base_url: str | None,
        api_key: str,
        tools: list[Message],
        reply_tokens: int = REPLY_TOKENS,
    ):
        self.name = name
        self.tools = tools
        self.reply_tokens = reply_tokens
        self.client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=2)

    def query(self, messages: list[Message], *, timeout_s: float) -> Reply:
        # `tool_choice` spelled out with the tools: some servers return tool calls only when asked
        # for "auto" (no tools: neither, an empty list is refused by some).
        offer: dict[str, Any] = {"tools": self.tools, "tool_choice": "auto"} if self.tools else {}
        try:
            response = self.client.chat.completions.create(
                model=self.name,
                messages=cast(Any, messages),
                timeout=timeout_s,
                max_tokens=self.reply_tokens,
                **offer,
            )
        except openai.APIStatusError as exc:
            raise ModelError(exc.message, status=exc.status_code, type=exc.type, code=exc.code) from exc
        except openai.APIError as exc:  # connection failures and timeouts
            raise ModelError(exc.message) from exc
        if not response.choices:
            raise ModelError("the model returned no choices")
        choice = response.choices[0].message
        calls = [
            ToolCall(id=call.id, name=call.function.name, arguments=call.function.arguments)
            for call in choice.tool_calls or []
            if call.type == "function"
        ]
        if not calls and choice.content:  # a call written as text (small and local models)
            offered = {str(tool.get("function", {}).get("name")) for tool in self.tools}
            written = calls_in_text(choice.content, offered)
            calls = [ToolCall(f"text-call-{i}", name, args) for i, (name, args) in enumerate(written)]
        message: Message = {"role": "assistant", "content": choice.content or ""}
        if calls:
            message["tool_calls"] = [call.as_message_part() for call in calls]
        usage = response.usage
        counts = {
            "prompt_tokens": usage.prompt_tokens if usage else 0,
            "completion_tokens": usage.completion_tokens if usage else 0,
            "total_tokens": usage.total_tokens if usage else 0,
        }
        return Reply(message=message, tool_calls=calls, usage=counts)
