"""The evaluation seam: how an agent is measured on a stage, chosen per run by name.

The driver (`service.driver.stages`) asks the run's evaluation policy, for the stage an agent
is on, what it still needs (`Need`: these results before I decide) or how the stage ended
(`StageOver`: passed or not, counted over which results, and why it stopped). The policy reads
only what the driver hands it (`StageProgress`): the agent's finished results on the stage and,
when it asks, its parent's and the run's admitted agents' counts on the same tasks. It keeps no
state of its own, so a run replayed from its rows decides the same.

`stages` (DGM's fixed stages, the default) needs every task of the stage and passes at the
threshold; `racing` (`service.selection.racing`) needs them a batch at a time and may stop
after any batch. `service.selection.evaluation_registry` maps the names a run config uses to
them; `register_evaluation_policy` there adds another.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from contracts.vocabulary import StageStop

Slot = tuple[str, int]  # (task id, trial)


@dataclass(frozen=True)
class Counts:
    """Results of one agent: `resolved` of `total` evaluations."""

    resolved: int
    total: int


class Peers(Protocol):
    """What a policy may ask of the rest of the run, on the stage's tasks in the current epoch
    (queried only when asked: the fixed stages never ask)."""

    def parent(self) -> Counts | None:
        """The parent's finished results on the stage's tasks; None for the seed or none yet."""
        ...

    def admitted(self) -> Sequence[Counts]:
        """Each other admitted agent's finished results on the stage's tasks (none left out)."""
        ...


@dataclass(frozen=True)
class StageProgress:
    """An agent on one stage: the stage's tasks (in order), its threshold, and the finished
    results the agent has on them (`done`: slot -> resolved)."""

    stage: int
    tasks: tuple[str, ...]
    trials: int
    threshold: float
    last: bool  # no stage follows this one
    done: Mapping[Slot, bool]
    peers: Peers

    def slots(self, tasks: Sequence[str]) -> tuple[Slot, ...]:
        """Each of `tasks` `trials` times, in the order the stage lists them."""
        return tuple((task, trial) for task in tasks for trial in range(self.trials))


@dataclass(frozen=True)
class Need:
    """The results the policy needs before it decides: the driver creates the missing ones and
    asks again once all of these are finished. Names at least one slot not finished yet."""

    slots: tuple[Slot, ...]


@dataclass(frozen=True)
class StageOver:
    """The stage is decided: `passed` (the agent goes on, or is admitted), counted as `resolved`
    of `total` results (`tasks` tasks); `stop` says why it ended (None: not recorded, the fixed
    stages); `detail` the bound behind it, in words."""

    passed: bool
    resolved: int
    total: int
    tasks: int
    stop: StageStop | None = None
    detail: str | None = None
    low: float | None = None
    high: float | None = None


Decision = Need | StageOver


class EvaluationPolicy(Protocol):
    name: str

    def decide(self, progress: StageProgress) -> Decision: ...


class FixedStages:
    """DGM's stages: every task of the stage, passed at the threshold."""

    name = "stages"

    def decide(self, progress: StageProgress) -> Decision:
        slots = progress.slots(progress.tasks)
        if any(slot not in progress.done for slot in slots):
            return Need(slots)
        resolved = sum(1 for slot in slots if progress.done[slot])
        return StageOver(
            passed=resolved / len(slots) >= progress.threshold,
            resolved=resolved,
            total=len(slots),
            tasks=len(progress.tasks),
        )
