"""The recorded test logs of fixtures/logs/ and the verdicts both graders must reach on them."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from tests.benchmarks.swebench.fixture_set import LOGS


class LogCase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    instance: str  # a fixture instance's folder name
    diff: str | None = None  # agent_diffs.named_diff, for recording
    log: str | None = None  # reuse another case's log
    timeout_s: float = 60
    timed_out: bool = False
    extra_fail_to_pass: list[str] = []
    resolved: dict[str, bool]  # swebench major version -> expected verdict
    why: str = ""

    @property
    def log_file(self) -> Path:
        return LOGS / f"{self.log or self.name}.log"


def log_cases() -> list[LogCase]:
    return [LogCase.model_validate(case) for case in json.loads((LOGS / "cases.json").read_text())]
