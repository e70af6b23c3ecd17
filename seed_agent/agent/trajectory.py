"""The trajectory: everything the agent did, written to `trajectory.json` as it goes.

Schema (version 1): `schema_version`, `agent`, `model`, `exit_reason`, `error`,
`started_at` / `finished_at` (Unix seconds), `usage` (token totals and `model_calls`),
`messages` (the conversation exactly as sent to the model) and `steps` (per model call:
its usage and the commands it ran, with exit code, timing and the output sent back).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from agent import __version__

SCHEMA_VERSION = 1


class ExitReason(StrEnum):
    COMPLETED = "completed"  # the model answered without a tool call
    MAX_STEPS = "max_steps"
    TIME_LIMIT = "time_limit"
    TOKEN_LIMIT = "token_limit"
    BUDGET_EXCEEDED = "budget_exceeded"  # Clade's gateway refused: the budget is spent
    MODEL_ERROR = "model_error"  # any other refusal or failure of the model endpoint
    TERMINATED = "terminated"  # killed by a signal (SIGTERM), e.g. the host's time limit
    CRASHED = "crashed"  # a bug in the agent itself


@dataclass
class Trajectory:
    model: str
    agent: str = f"clade-seed/{__version__}"
    exit_reason: ExitReason | None = None
    error: str | None = None
    started_at: float = field(default_factory=time.time)
    finished_at: float | None = None
    usage: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            ("prompt_tokens", "completion_tokens", "total_tokens", "model_calls"), 0
        )
    )
    messages: list[dict[str, Any]] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)

    def add_usage(self, usage: dict[str, int]) -> None:
        for key, value in usage.items():
            self.usage[key] = self.usage.get(key, 0) + value
        self.usage["model_calls"] += 1

    def finish(self, reason: ExitReason, error: str | None = None) -> ExitReason:
        self.exit_reason, self.error, self.finished_at = reason, error, time.time()
        return reason

    def to_dict(self) -> dict[str, Any]:
        return {"schema_version": SCHEMA_VERSION, **asdict(self)}

    def save(self, path: Path) -> None:
        """Write atomically, so a reader (or a kill mid-write) never sees half a file."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=1, ensure_ascii=False))
        os.replace(tmp, path)
