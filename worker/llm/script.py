"""Scripts for the scripted model: a deterministic stand-in for an LLM (format in SCRIPTED.md).

A script is an ordered list of rules; the first rule whose regexes all match
the request gives the reply. Replies depend only on the request, except for
rules with `times`, which count how often they fired in this process.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from worker.llm.config_files import load_model_file
from worker.llm.records import RecordedMessage

SCRIPTED_PREFIX = "scripted"
SCRIPTED_FINGERPRINT = "clade-scripted"
REGEX_FLAGS = re.MULTILINE | re.DOTALL
SYSTEM_ROLES = ("system", "developer")
MAX_CHOICES = 128  # OpenAI's own bound on `n`


def _compiles(pattern: str) -> str:
    try:
        re.compile(pattern, REGEX_FLAGS)
    except re.error as exc:
        raise ValueError(f"invalid regular expression: {exc}") from exc
    return pattern


Regex = Annotated[str, AfterValidator(_compiles)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Match(_Strict):
    """All given conditions must hold; regexes are searched (not anchored), MULTILINE|DOTALL."""

    model: Regex | None = None
    system: Regex | None = None
    last_user: Regex | None = None
    any: Regex | None = None
    tool_results: Regex | None = None
    last_tool_result: Regex | None = None
    assistant_turns: int | None = Field(default=None, ge=0)
    min_assistant_turns: int | None = Field(default=None, ge=0)
    max_assistant_turns: int | None = Field(default=None, ge=0)


class ToolCall(_Strict):
    name: str = Field(min_length=1)
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    id: str | None = None


class Reply(_Strict):
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish: Literal["stop", "tool_calls", "length", "content_filter"] | None = None

    @model_validator(mode="after")
    def _says_something(self) -> Reply:
        if self.content is None and not self.tool_calls:
            raise ValueError("a reply needs 'content' or 'tool_calls'")
        return self


class Rule(_Strict):
    name: str | None = None
    match: Match = Field(default_factory=Match)
    reply: Reply | None = None
    replies: list[Reply] | None = Field(
        default=None, min_length=1, description="indexed by the number of assistant turns so far"
    )
    times: int | None = Field(default=None, ge=1, description="fires at most this often")

    @model_validator(mode="after")
    def _one_reply_kind(self) -> Rule:
        if (self.reply is None) == (self.replies is None):
            raise ValueError("give exactly one of 'reply' or 'replies'")
        return self


class Script(_Strict):
    version: Literal[1] = 1
    model: str = Field(default=SCRIPTED_PREFIX, pattern=f"^{SCRIPTED_PREFIX}")
    rules: list[Rule] = Field(default_factory=list)
    # Model names (whole-name regexes) the server does not serve: a request for one gets a 404
    # `model_not_found`, as a real server answers for a model it does not have.
    refuse_models: list[Regex] = Field(default_factory=list)
    default: Reply = Field(
        default_factory=lambda: Reply(content="(scripted model: no rule matched this request)")
    )


def load_script(path: Path) -> Script:
    """Raises `ConfigFileError` naming the file and the field (e.g. `rules.0.match.lst_user`)."""
    return load_model_file(path, Script, "model script")


@dataclass(frozen=True)
class Conversation:
    """The parts of a chat request that rules look at."""

    model: str
    system: str
    last_user: str
    contents: tuple[str, ...]
    tool_results: tuple[str, ...]
    assistant_turns: int

    @classmethod
    def of(cls, body: dict[str, Any]) -> Conversation:
        raw = body.get("messages")
        messages = [RecordedMessage.from_openai(m) for m in (raw if isinstance(raw, list) else [])]
        users = [m.content or "" for m in messages if m.role == "user"]
        return cls(
            model=str(body.get("model") or ""),
            system="\n".join(m.content or "" for m in messages if m.role in SYSTEM_ROLES),
            last_user=users[-1] if users else "",
            contents=tuple(m.content or "" for m in messages),
            tool_results=tuple(m.content or "" for m in messages if m.role == "tool"),
            assistant_turns=sum(m.role == "assistant" for m in messages),
        )


def matches(match: Match, conv: Conversation) -> bool:
    def found(pattern: str | None, *texts: str) -> bool:
        return pattern is None or any(re.search(pattern, t, REGEX_FLAGS) for t in texts)

    turns = conv.assistant_turns
    last_tool = conv.tool_results[-1:]
    return (
        found(match.model, conv.model)
        and found(match.system, conv.system)
        and found(match.last_user, conv.last_user)
        and found(match.any, *conv.contents)
        and found(match.tool_results, *conv.tool_results)
        and found(match.last_tool_result, *last_tool)
        and (match.assistant_turns is None or turns == match.assistant_turns)
        and (match.min_assistant_turns is None or turns >= match.min_assistant_turns)
        and (match.max_assistant_turns is None or turns <= match.max_assistant_turns)
    )


def count_tokens(text: str) -> int:
    """Deterministic stand-in for a tokenizer: one token per 4 characters, rounded up."""
    return -(-len(text) // 4)


class ScriptedModel:
    """Turns requests into chat.completion responses; thread-safe."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self._fired = [0] * len(script.rules)
        self._lock = threading.Lock()

    def refuses(self, model: str) -> bool:
        return any(re.fullmatch(pattern, model, REGEX_FLAGS) for pattern in self.script.refuse_models)

    def choose(self, conv: Conversation) -> tuple[str, Reply]:
        """(rule label, reply): the first rule that matches and still has a reply for this turn."""
        with self._lock:
            for index, rule in enumerate(self.script.rules):
                if rule.times is not None and self._fired[index] >= rule.times:
                    continue
                if not matches(rule.match, conv):
                    continue
                reply = rule.reply
                if rule.replies is not None:
                    if conv.assistant_turns >= len(rule.replies):
                        continue
                    reply = rule.replies[conv.assistant_turns]
                if reply is not None:
                    self._fired[index] += 1
                    return rule.name or f"rules.{index}", reply
        return "default", self.script.default

    def respond(self, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """(rule label, response body); the same request gives the same body, byte for byte."""
        conv = Conversation.of(body)
        label, reply = self.choose(conv)
        turn = conv.assistant_turns
        tool_calls = [
            {
                "id": call.id or f"call_scripted_{turn}_{i}",
                "type": "function",
                "function": {"name": call.name, "arguments": _arguments(call.arguments)},
            }
            for i, call in enumerate(reply.tool_calls)
        ]
        content, finish = reply.content, reply.finish or ("tool_calls" if tool_calls else "stop")
        completion = count_tokens(content or "") + sum(
            count_tokens(call.name + _arguments(call.arguments)) for call in reply.tool_calls
        )
        cap = _reply_cap(body)
        if cap is not None and completion > cap:  # cut at max_tokens, as a real model stops
            content, tool_calls, finish = (content or "")[: 4 * cap], [], "length"
            completion = count_tokens(content)
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls:
            message["tool_calls"] = tool_calls
        prompt = sum(4 + count_tokens(text) for text in conv.contents)
        n = body.get("n")
        choices = n if isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= MAX_CHOICES else 1
        digest = hashlib.sha256(json.dumps([body, label], sort_keys=True).encode()).hexdigest()
        model = conv.model if conv.model.startswith(SCRIPTED_PREFIX) else self.script.model
        return label, {
            "id": f"chatcmpl-scripted-{digest[:24]}",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "system_fingerprint": SCRIPTED_FINGERPRINT,
            # `n` choices, each the same reply, each billed, as a real server does.
            "choices": [
                {
                    "index": index,
                    "message": message,
                    "finish_reason": finish,
                    "logprobs": None,
                }
                for index in range(choices)
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion * choices,
                "total_tokens": prompt + completion * choices,
            },
        }


def _reply_cap(body: dict[str, Any]) -> int | None:
    caps = [
        v
        for v in (body.get("max_completion_tokens"), body.get("max_tokens"))
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0
    ]
    # A real server honours the newer key when both are sent.
    return caps[0] if caps else None


def _arguments(arguments: dict[str, Any] | str) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)
