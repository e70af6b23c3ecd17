"""Answer shapes about models: each step's model choice and usage, and an agent's transfer table."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from contracts.vocabulary import StepKind
from service.lifecycle import StepStatus


class ArmPublic(BaseModel):
    """What the bandit knew of one improve model when it chose (service/selection/model_bandit.py)."""

    model: str
    pulls: int
    finished: int
    gain: float
    usd: float
    value: float | None  # score gain per dollar
    ucb: float | None


class ModelChoicePublic(BaseModel):
    """The step's improve model, fixed at its first dispatch (`models.improve_choice`)."""

    model: str
    why: Literal["first", "bandit"]
    reason: str
    fallbacks: list[str]
    arms: list[ArmPublic] | None = None  # the bandit's view; None with `first`


class ModelUsage(BaseModel):
    """A step's metered calls to one configured model for one purpose."""

    purpose: str
    model: str  # the configured model the calls were sent to
    role: Literal["primary", "fallback"] | None  # None: the purpose has one model
    calls: int
    errors: int  # refused or failed (a fallback's primary: its refusals)
    usd: float
    tokens: int


class StepPublic(BaseModel):
    id: str
    number: int
    kind: StepKind
    status: StepStatus
    parent_id: str
    child_id: str | None
    reason: str | None
    model_choice: ModelChoicePublic | None  # None: opened before choices were recorded
    usage: list[ModelUsage]
    usd: float
    tokens: int


class TransferRow(BaseModel):
    """An agent's result with one solving model on one benchmark and task set, pooled over the
    evaluation-only runs that scored it so (docs/models.md)."""

    model: str  # the primary solving model
    fallbacks: list[str]
    benchmark: str
    tasks: int  # distinct tasks in the runs' stages
    runs: list[str]
    running: int  # of `runs`, not finished yet
    resolved: int
    total: int  # evaluations counted (trials and runs pooled)
    rate: float | None
    low: float | None  # 95% Wilson interval of `rate`
    high: float | None
    usd: float
    tokens: int


class AgentTransfer(BaseModel):
    agent_id: str
    rows: list[TransferRow] = Field(description="best rate first")
