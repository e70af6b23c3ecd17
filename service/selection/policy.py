"""The policy seam: how a strategy (or a run feature) keeps its bookkeeping and decides moves.

The driver's tick (`service.driver.tick`) names no feature: it calls these hooks, in this
order, on the run's policy chain (its selection strategy first, then the run's features:
epochs, the held-out phase, crossover):

    entry_stages          the stages a new agent walks before its verdict (None: the run's)
    after_admission       agents were admitted or rejected: tag them, update shared state
    steps_allowed         how many more steps may open now (None: no limit of this policy's)
    reserved_evaluations  evaluations kept back from `budget.max_evaluations` for later
    next_move             per free slot: open a step (`Expand`), measure an existing agent
                          (`Measure`), or leave the slot free this tick (`Wait`)
    prepare_draw          the candidates the parent draw of a step sees (after bookkeeping)
    step_context          what the draw of a step may know beyond the candidates
    after_opening         steps were opened in this tick: tag them
    before_dispatch       work to do before jobs are sent; the agents it made (their refs)
    improve_parts         what an improve job of a step carries besides the parent
    may_complete          whether the run may complete once nothing is in flight

Every hook has a default that does nothing (`PolicyDefaults`), so a strategy overrides only
what it keeps. State a policy keeps lives in the run's rows and events, read and written
through the scope's ledger (`service.selection.ledger`), never in the policy object: a policy
is rebuilt from the run's configuration in every process, and a run replayed from its rows
must decide the same. Hooks run inside the tick's transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from contracts.jobs import CrossoverPart
from service.selection.candidates import Candidate, StepContext
from service.selection.ledger import RunLedger, StepView


class StageView(Protocol):
    """One stage of the run's plan, as a policy reads it."""

    @property
    def task_ids(self) -> tuple[str, ...]: ...

    @property
    def threshold(self) -> float: ...


class PlanView(Protocol):
    """What a policy may read of the run's plan (the driver's `RunPlan` is one)."""

    @property
    def stages(self) -> tuple[StageView, ...]: ...

    @property
    def rng_seed(self) -> int: ...

    @property
    def parallelism(self) -> int: ...

    @property
    def trials(self) -> int: ...


@dataclass(frozen=True)
class RunScope:
    """The run a hook acts on, inside the tick's transaction: its `ledger` (what a policy may
    read and write of it) and its `plan`. `steps_opened` is the number of steps the run had
    opened when the tick began: the steps a tick opens are numbered from `steps_opened + 1`."""

    ledger: RunLedger
    plan: PlanView
    steps_opened: int


@dataclass(frozen=True)
class Expand:
    """Spend the slot on a new step: a parent is drawn and a child made from it."""


@dataclass(frozen=True)
class Measure:
    """Spend the slot on measuring `agent_id` (an admitted agent of the run) on `task_ids`
    (tasks of the run's current stages), each `evaluation.trials` times; results already
    there are not asked for again."""

    agent_id: str
    task_ids: tuple[str, ...]

    def __post_init__(self) -> None:
        # A move that measures nothing would spend the slot and change nothing, every tick.
        if not self.agent_id or not self.task_ids:
            raise ValueError(f"a Measure move names an agent and at least one task, got {self!r}")


@dataclass(frozen=True)
class Wait:
    """Leave this slot and the ones after it free in this tick (e.g. a round is not over)."""

    reason: str


Move = Expand | Measure | Wait
EXPAND = Expand()


@dataclass(frozen=True)
class ImproveParts:
    """What an improve job carries for the policies: None where no policy gives it."""

    experience: str | None = None  # the run's shared experience pool (group evolution)
    crossover: CrossoverPart | None = None  # the second parent and the conflicts to resolve

    def merged(self, other: ImproveParts) -> ImproveParts:
        """These parts, with what `other` gives where these give nothing."""
        return ImproveParts(
            experience=self.experience if self.experience is not None else other.experience,
            crossover=self.crossover if self.crossover is not None else other.crossover,
        )


class SearchPolicy(Protocol):
    """The hooks the driver's tick calls; see the module's docstring for when."""

    def entry_stages(self, scope: RunScope, agent_id: str) -> Sequence[StageView] | None:
        """The stages `agent_id`, new in the run, walks before it is admitted or rejected: None
        for the current epoch's stages; none at all admits it unmeasured (its score stays None
        until a `Measure` gives it results)."""
        ...

    def after_admission(self, scope: RunScope) -> None: ...

    def steps_allowed(self, scope: RunScope) -> int | None: ...

    def reserved_evaluations(self, scope: RunScope) -> int: ...

    def next_move(self, scope: RunScope, number: int, chosen: Sequence[str]) -> Move:
        """The use of the slot that would open step `number`; `chosen` are the parents drawn
        earlier in this tick for the steps just before it (not opened yet)."""
        ...

    def prepare_draw(
        self, scope: RunScope, pool: Sequence[Candidate], number: int
    ) -> Sequence[Candidate]: ...

    def step_context(self, scope: RunScope, number: int, chosen: Sequence[str]) -> StepContext: ...

    def after_opening(self, scope: RunScope) -> None: ...

    def before_dispatch(self, scope: RunScope) -> list[str]: ...

    def improve_parts(self, scope: RunScope, step: StepView) -> ImproveParts: ...

    def may_complete(self, scope: RunScope) -> bool: ...


class PolicyDefaults:
    """Every hook doing nothing: the five stateless strategies draw exactly as they always did."""

    def entry_stages(self, scope: RunScope, agent_id: str) -> Sequence[StageView] | None:
        return None

    def after_admission(self, scope: RunScope) -> None:
        return None

    def steps_allowed(self, scope: RunScope) -> int | None:
        return None

    def reserved_evaluations(self, scope: RunScope) -> int:
        return 0

    def next_move(self, scope: RunScope, number: int, chosen: Sequence[str]) -> Move:
        return EXPAND

    def prepare_draw(self, scope: RunScope, pool: Sequence[Candidate], number: int) -> Sequence[Candidate]:
        return pool

    def step_context(self, scope: RunScope, number: int, chosen: Sequence[str]) -> StepContext:
        return StepContext(number=number)

    def after_opening(self, scope: RunScope) -> None:
        return None

    def before_dispatch(self, scope: RunScope) -> list[str]:
        return []

    def improve_parts(self, scope: RunScope, step: StepView) -> ImproveParts:
        return ImproveParts()

    def may_complete(self, scope: RunScope) -> bool:
        return True


class PolicyChain:
    """Several policies as one: each hook asks them in order.

    Bookkeeping hooks call every policy; `steps_allowed` is the tightest limit;
    `reserved_evaluations` the sum; `next_move` the first that does not expand;
    `improve_parts` and `entry_stages` the first given; `may_complete` holds when all agree (asked in
    order, stopping at the first that refuses: a later one may start work when asked).
    The draw hooks (`prepare_draw`, `step_context`) are the strategy's: the chain's first."""

    def __init__(self, policies: Sequence[SearchPolicy]) -> None:
        if not policies:
            raise ValueError("a policy chain needs at least one policy (the strategy)")
        self.policies = tuple(policies)

    def entry_stages(self, scope: RunScope, agent_id: str) -> Sequence[StageView] | None:
        for policy in self.policies:
            stages = policy.entry_stages(scope, agent_id)
            if stages is not None:
                return stages
        return None

    def after_admission(self, scope: RunScope) -> None:
        for policy in self.policies:
            policy.after_admission(scope)

    def steps_allowed(self, scope: RunScope) -> int | None:
        limits = [n for policy in self.policies if (n := policy.steps_allowed(scope)) is not None]
        return min(limits) if limits else None

    def reserved_evaluations(self, scope: RunScope) -> int:
        return sum(policy.reserved_evaluations(scope) for policy in self.policies)

    def next_move(self, scope: RunScope, number: int, chosen: Sequence[str]) -> Move:
        for policy in self.policies:
            move = policy.next_move(scope, number, chosen)
            if not isinstance(move, Expand):
                return move
        return EXPAND

    def prepare_draw(self, scope: RunScope, pool: Sequence[Candidate], number: int) -> Sequence[Candidate]:
        return self.policies[0].prepare_draw(scope, pool, number)

    def step_context(self, scope: RunScope, number: int, chosen: Sequence[str]) -> StepContext:
        return self.policies[0].step_context(scope, number, chosen)

    def after_opening(self, scope: RunScope) -> None:
        for policy in self.policies:
            policy.after_opening(scope)

    def before_dispatch(self, scope: RunScope) -> list[str]:
        return [ref for policy in self.policies for ref in policy.before_dispatch(scope)]

    def improve_parts(self, scope: RunScope, step: StepView) -> ImproveParts:
        parts = ImproveParts()
        for policy in self.policies:
            parts = parts.merged(policy.improve_parts(scope, step))
        return parts

    def may_complete(self, scope: RunScope) -> bool:
        return all(policy.may_complete(scope) for policy in self.policies)
