"""The run driver against a real database and git archive, with workers played by the test.

The dispatcher here is an in-memory outbox (the real one is Celery, exercised end to
end in tests/e2e); the test answers each job as a worker would, through the same
service functions the worker endpoints call.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from contracts.jobs import Budget
from contracts.records import EvaluationResult
from service.db.models import Evaluation, StageScore, Step
from service.driver.jobs import MAX_DISPATCHES
from service.driver.loop import RunDriver
from service.results import reject_step
from service.runs import change_state
from tests.service.driver_world import T, World, service_over


def test_stages_admission_and_completion(world: World) -> None:
    run_id = world.start()
    world.driver.tick()
    improve, evaluate = world.outbox.take()
    assert improve == [] and sorted(j.task_id for j in evaluate) == sorted(T[:2])  # the seed's stage 1 first
    for job in evaluate:
        world.answer(job, resolved=job.task_id == T[0])
    world.driver.tick()
    improve, evaluate = world.outbox.take()
    # 1/2 meets the 0.5 threshold: stage 2 evaluates only the tasks not yet run.
    assert sorted(j.task_id for j in evaluate) == sorted(T[2:]) and improve == []
    for job in evaluate:
        world.answer(job, resolved=False)
    world.driver.tick()
    seed = world.member(run_id, world.seed)
    assert (seed.status, seed.score) == ("admitted", 0.25)
    improve, evaluate = world.outbox.take()
    assert len(improve) == 1 and improve[0].parent_id == world.seed and improve[0].improver_id == world.seed

    child = world.make_child(improve[0])
    world.driver.tick()
    _, evaluate = world.outbox.take()
    for job in evaluate:
        world.answer(job, resolved=False)  # 0/2 on stage 1: below the threshold
    world.driver.tick()
    rejected = world.member(run_id, child)
    assert rejected.status == "rejected"
    assert rejected.reason == "stage 1: 0/2 resolved, below the threshold 0.5"
    with world.sessions() as session:
        assert session.scalars(select(Step).where(Step.child_id == child)).one().status == "rejected"
        scores = session.scalars(select(StageScore).where(StageScore.agent_id == child)).all()
        assert [(s.stage, s.resolved, s.total, s.passed) for s in scores] == [(0, 0, 2, False)]

    improve, _ = world.outbox.take()
    assert [j.parent_id for j in improve] == [world.seed]  # a rejected child is never a parent
    second = world.make_child(improve[0])
    world.driver.tick()
    _, evaluate = world.outbox.take()
    for job in evaluate:
        world.answer(job, resolved=True)
    world.driver.tick()
    _, evaluate = world.outbox.take()
    for job in evaluate:
        world.answer(job, resolved=True)
    world.driver.tick()
    assert world.member(run_id, second).score == 1.0
    run = world.run(run_id)
    assert (run.status, run.stop_reason) == (
        "completed",
        "budget: max_children reached (2 of 2 steps attempted: 2 made a child (1 admitted), 0 made none)",
    )


def test_the_stop_reason_counts_steps_and_says_a_rejected_one_made_no_child(world: World) -> None:
    """Fails on main: the reason read "budget: max_children reached (1)" for a run with no child."""
    run_id = world.start(budget={"max_children": 1}, stages=[{"tasks": T[:1]}])
    world.driver.tick()
    _, evaluate = world.outbox.take()
    world.answer(evaluate[0], resolved=False)
    world.driver.tick()
    improve, _ = world.outbox.take()
    with world.sessions.begin() as session:
        reject_step(session, step_id=improve[0].step_id, reason="the improver produced an empty patch")
    world.driver.tick()
    run = world.run(run_id)
    assert (run.status, run.stop_reason) == (
        "completed",
        "budget: max_children reached (1 of 1 steps attempted: 0 made a child (0 admitted), 1 made none)",
    )


def test_parallelism_and_a_restarted_driver(world: World) -> None:
    world.start(parallelism=3, budget={"max_children": 5}, stages=[{"tasks": T[:1]}])
    world.driver.tick()
    _, evaluate = world.outbox.take()
    world.answer(evaluate[0], resolved=True)
    world.driver.tick()
    improve, _ = world.outbox.take()
    assert len(improve) == 3  # parallelism steps in flight
    # A new driver (the service restarted) sees the same state and sends nothing twice.
    restarted = RunDriver(sessions=world.sessions, dispatcher=world.outbox, interval_s=0.1)
    restarted.tick()
    assert world.outbox.take() == ([], [])
    world.make_child(improve[0])
    restarted.tick()
    improve_more, evaluate = world.outbox.take()
    assert improve_more == [] and len(evaluate) == 1  # the slot is still taken while the child is scored
    world.answer(evaluate[0], resolved=False)
    restarted.tick()
    improve_more, _ = world.outbox.take()
    assert len(improve_more) == 1
    with world.sessions() as session:
        assert [s.number for s in session.scalars(select(Step).order_by(Step.number))] == [1, 2, 3, 4]


def test_pause_resume_cancel(world: World) -> None:
    run_id = world.start(stages=[{"tasks": T[:1]}])
    with world.sessions.begin() as session:
        change_state(session, run_id=run_id, action="pause")
    world.driver.tick()
    assert world.outbox.take() == ([], [])  # a paused run gets no new work
    with world.sessions.begin() as session:
        change_state(session, run_id=run_id, action="resume")
    world.driver.tick()
    _, evaluate = world.outbox.take()
    world.answer(evaluate[0], resolved=True)
    world.driver.tick()
    improve, _ = world.outbox.take()
    with world.sessions.begin() as session:
        change_state(session, run_id=run_id, action="cancel")
    with world.sessions() as session:
        step = session.scalars(select(Step)).one()
        assert (step.status, step.reason) == ("cancelled", "cancel requested")
    with pytest.raises(Exception, match="cancelled"):
        world.make_child(improve[0])  # a late worker gets a conflict, and nothing is written
    world.driver.tick()
    assert world.outbox.take() == ([], [])


def test_money_budget_stops_the_run_with_the_reason(world: World) -> None:
    run_id = world.start(budget={"max_children": 10, "max_usd": 0.5}, stages=[{"tasks": T[:2]}])
    world.driver.tick()
    _, evaluate = world.outbox.take()
    # Two evaluations in flight: each holds a lease on half of the money.
    assert [job.budget for job in evaluate] == [Budget(run_remaining_usd=0.25)] * 2
    world.answer(evaluate[0], resolved=True, usd=0.6)
    world.driver.tick()
    run = world.run(run_id)
    assert run.status == "completed"
    assert run.stop_reason == "budget: max_usd reached ($0.6000 of $0.5000)"
    with world.sessions() as session:
        statuses = {e.task_id: e.status for e in session.scalars(select(Evaluation))}
    assert statuses == {T[0]: "done", T[1]: "cancelled"}
    assert world.member(run_id, world.seed).status == "rejected"


def lose_jobs(world: World, model: type[Step] | type[Evaluation]) -> None:
    """Every job of `model` sent so far goes unanswered past its time limit."""
    with world.sessions.begin() as session:
        for item in session.scalars(select(model)):
            item.dispatched_at = datetime.now(UTC) - timedelta(days=1)


def test_lost_jobs_are_sent_again_then_given_up(world: World) -> None:
    world.start(stages=[{"tasks": T[:1]}])
    world.driver.tick()
    _, first = world.outbox.take()
    for attempt in range(2, MAX_DISPATCHES + 2):
        lose_jobs(world, Evaluation)
        world.driver.tick()
        _, again = world.outbox.take()
        if attempt <= MAX_DISPATCHES:
            assert [j.evaluation_id for j in again] == [first[0].evaluation_id]
    with world.sessions() as session:
        evaluation = session.scalars(select(Evaluation)).one()
    assert (evaluation.status, evaluation.resolved) == ("done", False)
    assert "no worker answered" in str(evaluation.result)

    world.driver.tick()  # the seed is scored (0 of 1) and admitted; its first step goes out
    improve, _ = world.outbox.take()
    for _ in range(MAX_DISPATCHES - 1):
        lose_jobs(world, Step)
        world.driver.tick()
        again, _ = world.outbox.take()
        assert [j.step_id for j in again] == [improve[0].step_id]
    lose_jobs(world, Step)
    world.driver.tick()  # given up
    world.driver.tick()  # its slot is free: the next step goes out
    again, _ = world.outbox.take()
    assert len(again) == 1 and again[0].step_id != improve[0].step_id
    with world.sessions() as session:
        steps = session.scalars(select(Step).order_by(Step.number)).all()
    assert [(s.status, s.reason) for s in steps] == [
        ("failed", f"no worker answered after {MAX_DISPATCHES} dispatches"),
        ("pending", None),  # its slot went to the next step
    ]


def test_an_evaluation_no_worker_answered_reads_back_through_the_api(world: World, tmp_path: Path) -> None:
    run_id = world.start(stages=[{"tasks": T[:1]}])
    for _ in range(MAX_DISPATCHES + 1):
        world.driver.tick()
        lose_jobs(world, Evaluation)
    with service_over(tmp_path) as client:  # the world's database and archive
        detail = client.get(f"/api/agents/{world.seed}")
        assert detail.status_code == 200, detail.text
        (in_run,) = detail.json()["runs"]
        (listed,) = in_run["evaluations"]
        assert in_run["run_id"] == run_id and (listed["status"], listed["resolved"]) == ("done", False)
        shown = client.get(f"/api/agents/{world.seed}/evaluations/{listed['id']}")
    assert shown.status_code == 200, shown.text
    result = shown.json()["result"]
    assert result["resolved"] is False
    assert result["infrastructure_failure"] == f"no worker answered after {MAX_DISPATCHES} dispatches"
    assert result["failure"] is None  # not the agent's doing


def test_an_improve_job_carries_the_failure_to_diagnose_and_its_budget(world: World) -> None:
    """The worker needs nothing from the service's read API: the job holds the failure."""
    world.start(
        stages=[{"tasks": T[:3]}],
        budget={"max_children": 1, "max_tokens": 1000, "per_evaluation_usd": 0.25},
    )
    world.driver.tick()
    _, evaluate = world.outbox.take()
    assert {job.budget for job in evaluate} == {
        Budget(run_remaining_tokens=333, evaluation_usd=0.25)  # a third of the tokens each
    }
    failed = EvaluationResult(
        resolved=False,
        grade_reason="1 of 2 FAIL_TO_PASS tests failed",
        fail_to_pass={"tests/test_a.py::test_fix": "FAILED", "tests/test_a.py::test_ok": "PASSED"},
        pass_to_pass={"tests/test_b.py::test_old": "ERROR"},
        diff="--- a/x.py\n+++ b/x.py\n" + "+y\n" * 5000,
        trajectory={"messages": [{"role": "assistant", "content": f"step {n}"} for n in range(30)]},
        agent_log="start\n" + "x" * 10_000 + "\nthe end",
    )
    by_task = {job.task_id: job for job in evaluate}
    world.answer(by_task[T[0]], resolved=True)
    world.answer(by_task[T[1]], resolved=False, result=failed)
    world.answer(by_task[T[2]], resolved=False, result=failed.model_copy(update={"grade_reason": "other"}))
    world.driver.tick()
    improve, _ = world.outbox.take()
    assert len(improve) == 1
    job = improve[0]
    # Tokens used by the three evaluations (15 each) are gone, their leases' unused rest is back;
    # the one job in flight may use all that is left, and an improve job has no per-evaluation cap.
    assert job.budget == Budget(run_remaining_tokens=1000 - 45)
    failure = job.failure
    assert failure is not None and failure.task_id in (T[1], T[2])
    with world.sessions() as session:
        chosen = session.get(Evaluation, failure.evaluation_id)
        assert chosen is not None and (chosen.task_id, chosen.resolved) == (failure.task_id, False)
    assert failure.failing_tests == ["tests/test_a.py::test_fix"]
    assert failure.broken_tests == ["tests/test_b.py::test_old"]
    assert failure.diff.startswith("--- a/x.py") and len(failure.diff) <= 6_000
    assert failure.agent_log_tail.endswith("the end") and len(failure.agent_log_tail) <= 6_000
    assert failure.trajectory_tail.splitlines()[-1] == '{"role": "assistant", "content": "step 29"}'
    assert len(failure.trajectory_tail.splitlines()) == 12
    # A job sent again diagnoses the same failure.
    with world.sessions.begin() as session:
        step = session.scalars(select(Step)).one()
        step.dispatched_at = datetime.now(UTC) - timedelta(days=1)
    world.driver.tick()
    again, _ = world.outbox.take()
    assert [j.failure for j in again] == [failure]


def test_a_parent_that_resolved_everything_has_no_failure(world: World) -> None:
    world.start(stages=[{"tasks": T[:1]}], budget={"max_children": 1})
    world.driver.tick()
    _, evaluate = world.outbox.take()
    world.answer(evaluate[0], resolved=True)
    world.driver.tick()
    improve, _ = world.outbox.take()
    assert len(improve) == 1 and improve[0].failure is None
