"""The quarantine file: tasks whose grader was caught wrong by `clade bench check --trials k`.

`clade bench check NAME --trials k --quarantine-out FILE` writes it; a run names it in its
`quarantine.file` and keeps those tasks out of its stages and held-out draws (service/plan.py).
It is a versioned record: the benchmark it is about, the options it was checked with, k, when,
and for each quarantined task the evidence (every trial's verdicts and reasons, the flaky tests).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

PatchName = Literal["gold", "empty"]
# More trials than this is a mistake, not a check (each is two gradings of every task).
MAX_TRIALS = 100


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class TrialOutcome(_Record):
    """One trial of one task: the gold patch and the empty patch, each graded once."""

    trial: int = Field(ge=1)  # 1-based
    gold_resolved: bool
    empty_resolved: bool
    gold_reason: str
    empty_reason: str


class FlakyTest(_Record):
    """A test whose status differed between trials of the same patch (None: not reported that trial)."""

    test: str
    patch: PatchName
    statuses: list[str | None]  # one per trial whose grading ran, in trial order


class TaskEvidence(_Record):
    """Why a task is quarantined: one line per finding, every trial, and its flaky tests."""

    evidence: list[str]
    trials: list[TrialOutcome]
    flaky_tests: list[FlakyTest] = Field(default_factory=list)


class QuarantineFile(_Record):
    schema_version: Literal[1] = 1
    benchmark: str = Field(min_length=1)
    options: dict[str, Any] = Field(default_factory=dict)  # as the check was given them
    trials: int = Field(ge=1, le=MAX_TRIALS)
    checked_at: datetime
    tasks: dict[str, TaskEvidence]  # instance id -> evidence; only the quarantined tasks


class QuarantineFileError(ValueError):
    """A quarantine file that cannot be read or is not one; the message names the file."""


def load_quarantine(path: Path) -> QuarantineFile:
    """The quarantine file at `path`, or QuarantineFileError saying what is wrong with it."""
    # Only a regular file: a pipe would hold the request until a writer came, a device never end.
    if path.exists() and not path.is_file():
        raise QuarantineFileError(f"{path}: not a regular file")
    try:
        text = path.read_bytes()  # not UTF-8: the model's JSON parser says where
    except OSError as exc:
        raise QuarantineFileError(f"{path}: cannot read it ({exc.strerror or exc})") from exc
    try:
        return QuarantineFile.model_validate_json(text)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "the file"
        raise QuarantineFileError(
            f"{path}: not a quarantine file written by `clade bench check --quarantine-out`"
            f" ({where}: {error['msg']})"
        ) from exc
