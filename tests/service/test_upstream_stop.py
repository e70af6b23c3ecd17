"""A run whose model upstream fails every call stops with that reason instead of scoring agents 0
(`budget.max_upstream_failures` evaluations in a row); one answered evaluation in between resets it."""

from __future__ import annotations

from contracts.jobs import EvaluateJob
from contracts.records import EvaluationResult
from service.lifecycle import RunStatus
from tests.service.driver_world import T, World

DOWN = EvaluationResult(
    resolved=False,
    infrastructure_failure="the model upstream failed every model call (2 of 2): HTTP 503, code overloaded",
    upstream_failed=True,
)


def start(world: World, failures: int | None, children: int = 3) -> tuple[str, list[EvaluateJob]]:
    """A run on four tasks whose stop is at `failures`; the seed's four evaluations, sent."""
    budget = {"max_children": children, "max_upstream_failures": failures}
    run_id = world.start(stages=[{"tasks": T, "threshold": 0.0}], budget=budget, parallelism=4)
    world.driver.tick()
    _, evaluate = world.outbox.take()
    assert len(evaluate) == 4
    return run_id, evaluate


def test_a_run_stops_when_its_upstream_fails_every_call_of_the_last_evaluations(world: World) -> None:
    run_id, evaluate = start(world, 3)
    for job in evaluate[:2]:
        world.answer(job, resolved=False, result=DOWN)
    world.driver.tick()
    assert world.run(run_id).status == RunStatus.RUNNING  # two in a row: not yet
    world.answer(evaluate[2], resolved=False, result=DOWN)
    world.driver.tick()
    run = world.run(run_id)
    assert run.status == RunStatus.COMPLETED
    reason = run.stop_reason or ""
    assert reason.startswith("model upstream failing"), reason
    assert "max_upstream_failures" in reason and "HTTP 503, code overloaded" in reason


def test_an_answered_evaluation_between_failures_keeps_the_run_going(world: World) -> None:
    run_id, evaluate = start(world, 2)
    world.answer(evaluate[0], resolved=False, result=DOWN)
    world.answer(evaluate[1], resolved=True)
    world.answer(evaluate[2], resolved=False, result=DOWN)
    world.driver.tick()
    assert world.run(run_id).status == RunStatus.RUNNING


def test_the_stop_can_be_turned_off(world: World) -> None:
    run_id, evaluate = start(world, None, children=1)
    for job in evaluate:
        world.answer(job, resolved=False, result=DOWN)
    world.driver.tick()
    reason = world.run(run_id).stop_reason or ""
    assert not reason.startswith("model upstream"), reason
