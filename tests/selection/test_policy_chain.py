"""How the run's policy chain combines the answers of its policies (no database needed)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from contracts.jobs import CrossoverPart
from service.selection import (
    EXPAND,
    ImproveParts,
    Measure,
    Move,
    PolicyChain,
    PolicyDefaults,
    RunScope,
    StepView,
    Wait,
    make_strategy,
)

STEP = StepView(number=1, parent_id="a", in_flight=True, group_id=None, kind="improve", second_parent_id=None)


class Scripted(PolicyDefaults):
    """A policy that answers what it is given and notes what it was asked."""

    def __init__(
        self,
        *,
        allowed: int | None = None,
        reserved: int = 0,
        move: Move = EXPAND,
        parts: ImproveParts | None = None,
        complete: bool = True,
    ) -> None:
        self.allowed, self.reserved, self.move = allowed, reserved, move
        self.parts, self.complete = parts or ImproveParts(), complete
        self.asked: list[str] = []

    def steps_allowed(self, scope: RunScope) -> int | None:
        return self.allowed

    def reserved_evaluations(self, scope: RunScope) -> int:
        return self.reserved

    def next_move(self, scope: RunScope, number: int, chosen: Sequence[str]) -> Move:
        return self.move

    def improve_parts(self, scope: RunScope, step: StepView) -> ImproveParts:
        return self.parts

    def may_complete(self, scope: RunScope) -> bool:
        self.asked.append("may_complete")
        return self.complete


@pytest.fixture
def scope() -> RunScope:
    # These policies read nothing of the run; the chain passes the scope on untouched.
    return RunScope(ledger=None, plan=None, steps_opened=0)  # type: ignore[arg-type]


def test_the_tightest_step_limit_holds_and_none_means_no_limit(scope: RunScope) -> None:
    chain = PolicyChain([Scripted(), Scripted(allowed=3), Scripted(allowed=1)])
    assert chain.steps_allowed(scope) == 1
    assert PolicyChain([Scripted(), Scripted()]).steps_allowed(scope) is None


def test_reserved_evaluations_add_up(scope: RunScope) -> None:
    assert (
        PolicyChain([Scripted(reserved=2), Scripted(), Scripted(reserved=5)]).reserved_evaluations(scope) == 7
    )


def test_the_first_policy_that_does_not_expand_decides_the_slot(scope: RunScope) -> None:
    measure = Measure(agent_id="a", task_ids=("t",))
    wait = Wait("round not over")
    assert (
        PolicyChain([Scripted(), Scripted(move=measure), Scripted(move=wait)]).next_move(scope, 1, [])
        == measure
    )
    assert PolicyChain([Scripted(), Scripted()]).next_move(scope, 1, []) == EXPAND


def test_improve_parts_take_what_each_policy_gives(scope: RunScope) -> None:
    crossover = CrossoverPart(second_parent_id="b" * 40, conflicts=[])
    chain = PolicyChain(
        [
            Scripted(parts=ImproveParts(experience="pool v2")),
            Scripted(parts=ImproveParts(experience="ignored", crossover=crossover)),
        ]
    )
    assert chain.improve_parts(scope, STEP) == ImproveParts(experience="pool v2", crossover=crossover)


def test_completion_stops_asking_at_the_first_refusal(scope: RunScope) -> None:
    first, refuses, later = Scripted(), Scripted(complete=False), Scripted()
    assert PolicyChain([first, refuses, later]).may_complete(scope) is False
    assert (first.asked, refuses.asked, later.asked) == (["may_complete"], ["may_complete"], [])


def test_a_measure_names_an_agent_and_a_task() -> None:
    with pytest.raises(ValueError, match="at least one task"):
        Measure(agent_id="a", task_ids=())
    with pytest.raises(ValueError, match="names an agent"):
        Measure(agent_id="", task_ids=("t",))


def test_a_chain_needs_a_policy() -> None:
    with pytest.raises(ValueError, match="at least one policy"):
        PolicyChain([])


@pytest.mark.parametrize("name", ["score_child_prop", "score_prop", "best", "random", "hgm"])
def test_the_stateless_strategies_keep_every_default(name: str, scope: RunScope) -> None:
    strategy = make_strategy(name)
    # None of these hooks reads the run for them: the driver asks, they change nothing.
    assert strategy.steps_allowed(scope) is None
    assert strategy.reserved_evaluations(scope) == 0
    assert strategy.next_move(scope, 4, ["x"]) == EXPAND
    assert strategy.step_context(scope, 4, ["x"]).siblings == ()
    assert strategy.improve_parts(scope, STEP) == ImproveParts()
    assert strategy.before_dispatch(scope) == []
    assert strategy.may_complete(scope) is True
