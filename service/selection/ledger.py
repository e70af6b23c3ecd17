"""What a policy may read and write of its run: the ledger the driver's tick hands to the hooks.

Policies never touch the database's tables: the driver implements `RunLedger` over them
(`service.driver.ledger`), inside the tick's transaction, so what a hook writes commits with
the tick or not at all. The views are plain snapshots; writing goes through the ledger's
methods, which name the columns the API shows (a member's `island` and `niche`, a step's
`group_id`) or add a run event of the policy's own kind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from service.selection.costs import CostModel


@dataclass(frozen=True, slots=True)
class MemberView:
    """An agent of the run (admitted or not): `step_number` is that of the step that made it
    (0 for the seed; None for an agent not made by a step of this run)."""

    agent_id: str
    parent_id: str | None
    admitted: bool
    step_number: int | None
    score: float | None
    epoch: int  # the utility version its score belongs to
    island: int | None
    niche: str | None


@dataclass(frozen=True, slots=True)
class StepView:
    """A step of the run: `in_flight` while its child is being made or scored; `kind` as the
    API shows it ("improve", "crossover", "hyper")."""

    number: int
    parent_id: str
    in_flight: bool
    group_id: str | None
    kind: str
    second_parent_id: str | None


@dataclass(frozen=True, slots=True)
class EvaluationView:
    """One evaluation of an agent in the run's current epoch; `resolved` is None until `done`."""

    agent_id: str
    task_id: str
    trial: int
    purpose: str  # "selection" for the stages; re-scoring and held-out ones are listed too
    done: bool
    resolved: bool | None


@dataclass(frozen=True, slots=True)
class AgentTally:
    """An agent's evaluations of the run's current epoch, held-out ones left out, counted: every
    trial sent (`evaluations`), the finished ones resolved (`passes`) and not (`fails`), and the
    distinct tasks it was given (`tasks`) and still waits on (`pending_tasks`)."""

    evaluations: int = 0
    passes: int = 0
    fails: int = 0
    tasks: int = 0
    pending_tasks: int = 0


class RunLedger(Protocol):
    """The run a hook acts on, read and written inside the tick's transaction."""

    @property
    def run_id(self) -> str: ...

    @property
    def seed_agent_id(self) -> str: ...

    @property
    def epoch(self) -> int:
        """The run's current epoch (utility version)."""
        ...

    def members(self) -> list[MemberView]:
        """Every agent of the run, by agent id."""
        ...

    def steps(self) -> list[StepView]:
        """Every step of the run, by number (the steps opened in this tick included)."""
        ...

    def evaluations(self, agent_ids: Sequence[str]) -> list[EvaluationView]:
        """The current epoch's evaluations of these agents, done or pending."""
        ...

    def tallies(self) -> dict[str, AgentTally]:
        """Each agent's tally of its current epoch's evaluations (held-out ones left out), by
        agent id; agents without one are missing. A count the database makes, for a policy that
        reads the whole run at every move."""
        ...

    def events(self, kind: str) -> list[dict[str, Any]]:
        """The payloads of the run's events of `kind`, oldest first."""
        ...

    def record(self, kind: str, payload: Mapping[str, Any]) -> None:
        """Add a run event (shown in the run's event list); readable by `events` at once."""
        ...

    def set_island(self, agent_id: str, island: int) -> None: ...

    def set_niche(self, agent_id: str, niche: str) -> None: ...

    def set_group(self, step_number: int, group_id: str) -> None: ...

    def update_experience(self, limit_chars: int) -> None:
        """Write a new version of the run's shared experience pool if steps finished since the
        last (`service.experience`; it learns from the steps that have a group id)."""
        ...

    def experience(self) -> str | None:
        """The latest experience pool's text; None before any version."""
        ...

    def costs(self) -> CostModel:
        """What an evaluation of each agent on each task is expected to cost, from the run's
        finished selection evaluations (`service.selection.costs`)."""
        ...
