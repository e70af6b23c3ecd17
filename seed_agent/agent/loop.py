"""The agent loop: ask the model, run the commands it asks for, repeat until it stops."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agent.model import ModelClient, ModelError, ToolCall
from agent.tools import run_bash
from agent.trajectory import ExitReason, Trajectory


@dataclass(frozen=True)
class Limits:
    max_steps: int
    deadline: float  # a time.monotonic() value; no model call or command runs past it
    max_tokens: int
    command_timeout_s: float = 120.0
    max_output_chars: int = 10_000


class Agent:
    def __init__(
        self,
        model: ModelClient,
        repo: Path,
        limits: Limits,
        trajectory: Trajectory,
        on_step: Callable[[], None] = lambda: None,
    ):
        self.model = model
        self.repo = repo
        self.limits = limits
        self.trajectory = trajectory
        self.on_step = on_step  # called after every step, e.g. to save the trajectory

    def run(self, system_prompt: str, task_prompt: str) -> ExitReason:
        messages = self.trajectory.messages
        messages.append({"role": "system", "content": system_prompt})
        messages.append({"role": "user", "content": task_prompt})
        for step in range(1, self.limits.max_steps + 1):
            remaining = self.limits.deadline - time.monotonic()
            if remaining <= 0:
                return self.trajectory.finish(ExitReason.TIME_LIMIT)
            started = time.monotonic()
            try:
                reply = self.model.query(messages, timeout_s=remaining)
            except ModelError as exc:
                spent = exc.budget_exceeded
                reason = ExitReason.BUDGET_EXCEEDED if spent else ExitReason.MODEL_ERROR
                detail = f"{exc} (status {exc.status}, type {exc.type}, code {exc.code})"
                return self.trajectory.finish(reason, detail)
            messages.append(reply.message)
            self.trajectory.add_usage(reply.usage)
            if not reply.tool_calls:
                return self.trajectory.finish(ExitReason.COMPLETED)
            records = []
            for call in reply.tool_calls:
                content, record = self.execute(call)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
                records.append(record)
            elapsed = round(time.monotonic() - started, 3)
            self.trajectory.steps.append(
                {"step": step, "usage": reply.usage, "duration_s": elapsed, "tool_calls": records}
            )
            self.on_step()
            if self.trajectory.usage["total_tokens"] >= self.limits.max_tokens:
                return self.trajectory.finish(ExitReason.TOKEN_LIMIT)
        return self.trajectory.finish(ExitReason.MAX_STEPS)

    def execute(self, call: ToolCall) -> tuple[str, dict[str, Any]]:
        """Run one tool call; return the text for the model and a record for the trajectory."""
        try:
            command = json.loads(call.arguments)["command"]
        except (json.JSONDecodeError, KeyError, TypeError):
            command = None
        if call.name != "bash" or not isinstance(command, str):
            # A malformed call is answered, not fatal: the model can read the error and retry.
            error = 'Error: call the `bash` tool with arguments like {"command": "ls"}.'
            record = {"id": call.id, "tool": call.name, "arguments": call.arguments}
            return error, {**record, "error": error}
        print(f"$ {command[:200]}", file=sys.stderr)
        remaining = self.limits.deadline - time.monotonic()
        result = run_bash(
            command,
            cwd=self.repo,
            timeout_s=max(1.0, min(self.limits.command_timeout_s, remaining)),
            max_output_chars=self.limits.max_output_chars,
        )
        return result.for_model(), {"id": call.id, "tool": "bash", **asdict(result)}
