"""Honest scores with the real driver: reused results, trials, held-out tasks, Wilson intervals.

Workers are played by the test (see driver_world.py); the tests that matter on both databases
take `any_world` (SQLite and PostgreSQL).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from benchmarks.catalog import BenchmarkCatalog
from cli.output import run_row
from contracts.config import ConfigFieldError, HeldoutConfig, RunConfig
from contracts.family import Scored, family_estimates
from contracts.intervals import Z_95, simultaneous_z, wilson
from contracts.jobs import EvaluateJob
from contracts.records import EvaluationResult
from service.archive.export import agent_metadata
from service.db.models import Evaluation, Event, LLMUsage, Run, StageScore
from service.driver.heldout import phase_cost, reserve
from service.driver.loop import RunDriver
from service.plan import plan_run, stored_plan
from service.queries import top_agents
from tests.service.driver_world import RecordingDispatcher, T, World, service_over


def evaluations(world: World, run_id: str, agent_id: str) -> list[Evaluation]:
    with world.sessions() as session:
        return list(
            session.scalars(
                select(Evaluation)
                .where(Evaluation.run_id == run_id, Evaluation.agent_id == agent_id)
                .order_by(Evaluation.task_id, Evaluation.trial)
            )
        )


def trial_of(world: World, job: EvaluateJob) -> int:
    with world.sessions() as session:
        evaluation = session.get(Evaluation, job.evaluation_id)
        assert evaluation is not None
        return evaluation.trial


def answer_all(world: World, resolved: set[str]) -> list[EvaluateJob]:
    """Tick, and answer every evaluation sent: resolved iff its task is in `resolved`. Improve
    jobs stay in the outbox."""
    world.driver.tick()
    sent, world.outbox.sent_evaluate = world.outbox.sent_evaluate, []
    for job in sent:
        world.answer(job, resolved=job.task_id in resolved)
    return sent


@pytest.fixture
def api(world_for_api: World, tmp_path: Path) -> Iterator[TestClient]:
    with service_over(tmp_path, world_for_api.url) as client:
        yield client


@pytest.fixture
def world_for_api(any_world: World) -> World:
    return any_world


def test_a_child_with_the_code_of_an_agent_in_the_run_is_not_evaluated_again(any_world: World) -> None:
    world = any_world
    run_id = world.start()  # stages: T[:2] at 0.5, then all of T; two children, one at a time
    answer_all(world, {T[0], T[2]})
    answer_all(world, {T[0], T[2]})  # the seed: 2/4
    world.driver.tick()
    improve, _ = world.outbox.take()
    first = world.make_child(improve[0], "1\n")
    answer_all(world, {T[0]})
    answer_all(world, {T[0]})  # the first child: 1/4, below the seed, so the seed is the next parent
    world.driver.tick()
    improve, _ = world.outbox.take()
    assert [job.parent_id for job in improve] == [world.seed]
    with world.sessions() as session:
        usage_before = len(session.scalars(select(LLMUsage)).all())
    twin = world.make_child(improve[0], "1\n")  # the same code as the first child: a new commit, one tree
    world.driver.tick()
    _, sent = world.outbox.take()
    assert sent == []  # nothing to run: every result is known
    member, original = world.member(run_id, twin), world.member(run_id, first)
    assert member.same_as == first
    assert (member.status, member.score, member.resolved, member.attempted) == ("admitted", 0.25, 1, 4)
    assert (original.score, original.resolved, original.attempted) == (0.25, 1, 4)
    copied, measured = evaluations(world, run_id, twin), evaluations(world, run_id, first)
    assert [e.reused_from for e in copied] == [e.id for e in measured]
    assert [(e.task_id, e.resolved, e.status) for e in copied] == [
        (e.task_id, e.resolved, e.status) for e in measured
    ]
    assert all(e.cost_usd == 0 and e.prompt_tokens == 0 and e.dispatches == 0 for e in copied)
    assert {e.reuse_key for e in copied} == {e.reuse_key for e in measured}
    with world.sessions() as session:
        assert len(session.scalars(select(LLMUsage)).all()) == usage_before  # nothing spent again
        stages = session.scalars(
            select(StageScore).where(StageScore.agent_id == twin).order_by(StageScore.stage)
        ).all()
        assert [(s.stage, s.resolved, s.total, s.passed) for s in stages] == [
            (0, 1, 2, True),
            (1, 1, 4, True),  # stage 2 is all four tasks
        ]
    world.driver.tick()
    assert world.run(run_id).status == "completed"


def test_results_from_other_runs_are_reused_only_when_asked_and_only_when_trusted(world: World) -> None:
    evaluation_only = {"stages": [{"tasks": T}], "budget": {"max_children": 0}}
    first = world.start(**evaluation_only)
    world.driver.tick()
    _, sent = world.outbox.take()
    untrusted = {
        T[1]: EvaluationResult(resolved=False, infrastructure_failure="the docker daemon went away"),
        T[2]: EvaluationResult(resolved=False, tampered="the test reports were rewritten"),
    }
    for job in sent:
        world.answer(job, resolved=job.task_id == T[0], result=untrusted.get(job.task_id))
    world.driver.tick()
    assert world.run(first).status == "completed"

    reusing = world.start(**evaluation_only, evaluation={"reuse": "archive"})
    sent = answer_all(world, {T[1], T[2]})
    # Only what was lost to infrastructure or forged runs again.
    assert sorted(job.task_id for job in sent) == sorted([T[1], T[2]])
    world.driver.tick()
    by_task = {e.task_id: e for e in evaluations(world, reusing, world.seed)}
    sources = {e.task_id: e.id for e in evaluations(world, first, world.seed)}
    assert {task: e.reused_from for task, e in by_task.items()} == {
        T[0]: sources[T[0]],
        T[1]: None,
        T[2]: None,
        T[3]: sources[T[3]],
    }
    seed = world.member(reusing, world.seed)
    assert (seed.status, seed.resolved, seed.attempted) == ("admitted", 3, 4)
    assert world.run(reusing).status == "completed"

    # By default a run measures for itself, whatever the archive holds.
    plain = world.start(**evaluation_only)
    assert sorted(job.task_id for job in answer_all(world, {T[0]})) == sorted(T)
    assert all(e.reused_from is None for e in evaluations(world, plain, world.seed))


def test_trials_repeat_each_task_and_the_threshold_applies_over_all_of_them(world: World) -> None:
    run_id = world.start(
        stages=[{"tasks": T[:2], "threshold": 0.5}],
        budget={"max_children": 1},
        evaluation={"trials": 3},
    )
    world.driver.tick()
    _, sent = world.outbox.take()
    assert sorted((job.task_id, trial_of(world, job)) for job in sent) == sorted(
        (task, trial) for task in T[:2] for trial in range(3)
    )
    for job in sent:
        world.answer(job, resolved=trial_of(world, job) == 0 or job.task_id == T[0])
    world.driver.tick()
    seed = world.member(run_id, world.seed)
    assert (seed.resolved, seed.attempted, seed.score) == (4, 6, 4 / 6)
    world.driver.tick()
    improve, _ = world.outbox.take()
    child = world.make_child(improve[0])
    world.driver.tick()
    _, sent = world.outbox.take()
    assert len(sent) == 6
    for job in sent:
        world.answer(job, resolved=trial_of(world, job) == 0)  # 2 of 6: each task once in three
    world.driver.tick()
    member = world.member(run_id, child)
    assert (member.status, member.resolved, member.attempted) == ("rejected", 2, 6)
    assert member.reason == "stage 1: 2/6 resolved, below the threshold 0.5"
    assert world.run(run_id).status == "completed"


BOTH = simultaneous_z(2)  # intervals that hold for 2 agents at once


def test_the_best_agent_is_chosen_on_held_out_tasks_that_never_fed_selection(
    any_world: World, api: TestClient
) -> None:
    world = any_world
    run_id = world.start(
        stages=[{"tasks": T[:2], "threshold": 0.5}],
        evaluation={"heldout": {"tasks": T[2:], "top_k": 2}},
    )
    stage_tasks = set(T[:2])
    sent = answer_all(world, {T[0]})  # the seed: 1/2
    world.driver.tick()
    improve, _ = world.outbox.take()
    first = world.make_child(improve[0])
    sent += answer_all(world, {T[0], T[1]})  # 2/2: the best by selection score
    world.driver.tick()
    improve, _ = world.outbox.take()
    assert [job.parent_id for job in improve] == [first]
    second = world.make_child(improve[0])
    sent += answer_all(world, {T[1]})  # 1/2, later than the seed
    assert {job.task_id for job in sent} <= stage_tasks  # nothing held out while children are made
    world.driver.tick()  # the last child is admitted: the held-out phase starts, its jobs go out
    with world.sessions() as session:
        kinds = [e.kind for e in session.scalars(select(Event).where(Event.run_id == run_id))]
    assert "heldout_started" in kinds and "heldout_finished" not in kinds
    _, heldout = world.outbox.take()
    assert sorted((job.agent_id, job.task_id) for job in heldout) == sorted(
        (agent, task) for agent in (first, world.seed) for task in T[2:]
    )
    assert world.run(run_id).status == "running"
    for job in heldout:
        world.answer(job, resolved=job.agent_id == world.seed)  # the selection favourite fails them all
    world.driver.tick()
    assert world.run(run_id).status == "completed"

    seed, best_by_selection, other = (world.member(run_id, a) for a in (world.seed, first, second))
    assert (seed.heldout_resolved, seed.heldout_total) == (2, 2)
    assert (best_by_selection.heldout_resolved, best_by_selection.heldout_total) == (0, 2)
    assert (other.heldout_resolved, other.heldout_total) == (None, None)  # not in the top 2
    assert (best_by_selection.score, seed.score) == (1.0, 0.5)  # selection scores untouched
    with world.sessions() as session:
        assert top_agents(session, run_id=run_id, k=3) == [world.seed, first, second]
        finished = session.scalars(
            select(Event).where(Event.run_id == run_id, Event.kind == "heldout_finished")
        ).one()
        assert finished.payload["best_agent_id"] == world.seed
        (record,) = agent_metadata(session, agent_id=world.seed).runs  # metadata.json of an export
        assert (record.resolved, record.attempted, record.heldout_resolved, record.heldout_total) == (
            1,
            2,
            2,
            2,
        )
        # The seed won a comparison of 2 agents on these tasks: its interval holds for both at
        # once, so its lower bound is below the plain 95% one.
        assert record.heldout_compared == 2
        assert (record.heldout_low, record.heldout_high) == pytest.approx(wilson(2, 2, BOTH))
        assert record.heldout_low is not None and record.heldout_low < wilson(2, 2)[0]
        assert finished.payload["agents"][world.seed]["low"] == pytest.approx(wilson(2, 2, BOTH)[0], abs=1e-4)
        assert all(
            e.purpose == "heldout"
            for e in session.scalars(select(Evaluation).where(Evaluation.task_id.in_(T[2:])))
        )

    run = api.get(f"/api/runs/{run_id}").json()
    # `clade run list`; the held-out 2 of 2 alone would be [0.34, 1.00].
    assert run_row(run)[6:9] == ["0.50 [0.09, 0.91]", "1.00 [0.28, 1.00]", world.seed[:12]]
    progress = run["progress"]
    assert progress["best_agent_id"] == world.seed
    assert progress["best_score"] == 0.5
    assert (progress["best_score_low"], progress["best_score_high"]) == pytest.approx(wilson(1, 2))
    assert progress["best_heldout_score"] == 1.0
    assert (progress["best_heldout_low"], progress["best_heldout_high"]) == pytest.approx(wilson(2, 2, BOTH))
    assert progress["evaluations_reused"] == 0
    agents = {a["id"]: a for a in api.get(f"/api/runs/{run_id}/agents").json()["items"]}
    assert (agents[first]["score_low"], agents[first]["score_high"]) == pytest.approx(wilson(2, 2))
    assert (agents[first]["heldout_low"], agents[first]["heldout_high"]) == (
        0.0,
        pytest.approx(wilson(0, 2, BOTH)[1]),
    )
    assert agents[first]["heldout_compared"] == 2
    assert agents[second]["heldout_score"] is None
    assert (agents[second]["score_low"], agents[second]["score_high"]) == pytest.approx(wilson(1, 2))
    # 1 of 2 is not 0.5 exactly: about [0.09, 0.91].
    assert wilson(1, 2) == pytest.approx((0.0945, 0.9055), abs=1e-4)


def test_a_sampled_held_out_set_is_drawn_from_the_tasks_no_stage_uses_and_stored_with_the_run() -> None:
    config = RunConfig.model_validate(
        {
            "seed_agent": "a" * 40,
            "stages": [{"subset": "mini-5"}, {"subset": "mini-10"}],
            "evaluation": {"heldout": {"sample": 3}},
        }
    )
    catalog = BenchmarkCatalog()
    plan = plan_run(config, catalog=catalog, visibility_timeout_s=10**6)
    heldout = plan.config.evaluation.heldout
    assert heldout is not None and heldout.tasks is not None and len(heldout.tasks) == 3
    assert not set(heldout.tasks) & {task for stage in plan.stages for task in stage.task_ids}
    assert (heldout.sample, heldout.top_k) == (None, 3)  # stored as the tasks drawn
    again = plan_run(config, catalog=catalog, visibility_timeout_s=10**6).config.evaluation.heldout
    assert again is not None and again.tasks == heldout.tasks  # the run's rng_seed fixes the draw


def test_max_evaluations_stops_the_steps_in_time_for_the_held_out_phase(any_world: World) -> None:
    world = any_world
    run_id = world.start(
        stages=[{"tasks": T[:2]}],
        budget={"max_children": 10, "max_evaluations": 6},
        evaluation={"heldout": {"tasks": T[2:], "top_k": 1}},
    )
    answer_all(world, {T[0]})  # the seed: 2 evaluations run; with the held-out phase's 2, 4 of 6
    world.driver.tick()
    improve, _ = world.outbox.take()
    assert len(improve) == 1
    child = world.make_child(improve[0])
    answer_all(world, {T[0], T[1]})  # the child's 2: 4 run + 2 kept for the held-out phase = 6
    world.driver.tick()
    improve, heldout = world.outbox.take()
    assert improve == []  # no step opens: its evaluations would pass the budget
    assert sorted((job.agent_id, job.task_id) for job in heldout) == [(child, task) for task in sorted(T[2:])]
    for job in heldout:
        world.answer(job, resolved=True)
    world.driver.tick()
    run = world.run(run_id)
    assert (run.status, run.stop_reason) == ("completed", "budget: max_evaluations reached (6 of 6)")
    with world.sessions() as session:
        assert len(session.scalars(select(Evaluation).where(Evaluation.run_id == run_id)).all()) == 6
        assert top_agents(session, run_id=run_id, k=1) == [child]


def start_a_raced_run(world: World) -> str:
    """A run whose top 3 race on T[1:] in 2 rounds (parts T[1:3], then T[3:])."""
    return world.start(
        stages=[{"tasks": T[:1]}], evaluation={"heldout": {"tasks": T[1:], "top_k": 3, "rounds": 2}}
    )


def admit_three_racers(world: World) -> tuple[list[str], list[EvaluateJob]]:
    """The seed and two children admitted (seed first), and the race's first round, sent."""
    answer_all(world, {T[0]})  # the seed
    agents = [world.seed]
    for _ in range(2):
        world.driver.tick()
        improve, _ = world.outbox.take()
        agents.append(world.make_child(improve[0]))
        answer_all(world, {T[0]})
    world.driver.tick()  # every child admitted: the race's first round goes out to all three
    _, round_one = world.outbox.take()
    return agents, round_one


def test_a_raced_held_out_phase_sends_the_later_tasks_only_to_the_better_half(any_world: World) -> None:
    world = any_world
    run_id = start_a_raced_run(world)
    with world.sessions() as session:
        run = session.get(Run, run_id)
        assert run is not None
        plan = stored_plan(run)
        # 3 agents x 2 tasks, then 2 agents x 1 task: what is kept back from the budget.
        assert reserve(session, run, plan) == 8
    agents, round_one = admit_three_racers(world)
    seed, first, second = agents
    assert sorted((job.agent_id, job.task_id) for job in round_one) == sorted(
        (agent, task) for agent in agents for task in T[1:3]
    )
    wins = {seed: 0, first: 1, second: 2}  # held-out tasks each resolves in round one
    for job in round_one:
        world.answer(job, resolved=T[1:3].index(job.task_id) < wins[job.agent_id])
    world.driver.tick()
    _, round_two = world.outbox.take()
    assert sorted(job.agent_id for job in round_two) == sorted([first, second])  # the seed stopped
    assert {job.task_id for job in round_two} == {T[3]}
    assert world.run(run_id).status == "running"
    for job in round_two:
        world.answer(job, resolved=job.agent_id == first)
    world.driver.tick()
    assert world.run(run_id).status == "completed"
    scores = {
        a: (world.member(run_id, a).heldout_resolved, world.member(run_id, a).heldout_total) for a in agents
    }
    assert scores == {seed: (0, 2), first: (2, 3), second: (2, 3)}
    with world.sessions() as session:
        finished = session.scalars(
            select(Event).where(Event.run_id == run_id, Event.kind == "heldout_finished")
        ).one()
        assert {a: s["total"] for a, s in finished.payload["agents"].items()} == {
            seed: 2,
            first: 3,
            second: 3,
        }
        # first and second tie at 2 of 3: the earlier (the chosen order) is named.
        assert finished.payload["best_agent_id"] == first
        assert top_agents(session, run_id=run_id, k=3) == [first, second, seed]
        assert reserve(session, run, plan) == 0


def test_an_agent_stopped_early_in_the_race_is_never_named_over_a_finalist(any_world: World) -> None:
    world = any_world
    run_id = start_a_raced_run(world)
    agents, round_one = admit_three_racers(world)
    for job in round_one:
        world.answer(job, resolved=True)  # a three-way tie: the chosen order decides who goes on
    world.driver.tick()
    _, round_two = world.outbox.take()
    stopped = next(a for a in agents if a not in {job.agent_id for job in round_two})
    for job in round_two:
        world.answer(job, resolved=False)
    world.driver.tick()
    # 2 of 2 has a higher lower bound than 2 of 3, but the finalists were measured on more tasks.
    assert wilson(2, 2)[0] > wilson(2, 3)[0]
    with world.sessions() as session:
        assert top_agents(session, run_id=run_id, k=3)[-1] == stopped


def test_a_race_needs_a_task_for_each_round() -> None:
    config = RunConfig.model_validate(
        {
            "seed_agent": "a" * 40,
            "stages": [{"subset": "mini-5"}],
            "evaluation": {"heldout": {"sample": 2, "rounds": 3}},
        }
    )
    with pytest.raises(ConfigFieldError, match="2 held-out tasks cannot be sent in 3 rounds") as caught:
        plan_run(config, catalog=BenchmarkCatalog(), visibility_timeout_s=10**6)
    assert caught.value.field.startswith("evaluation.heldout")
    with pytest.raises(ValueError, match="'rounds' \\(3\\) needs at least as many tasks \\(2\\)"):
        RunConfig.model_validate(
            {"seed_agent": "a" * 40, "evaluation": {"heldout": {"tasks": ["t1", "t2"], "rounds": 3}}}
        )


def test_a_seed_in_the_race_needs_someone_to_race_against() -> None:
    with pytest.raises(ValueError, match="'include_seed' needs 'top_k' of at least 2"):
        RunConfig.model_validate(
            {
                "seed_agent": "a" * 40,
                "evaluation": {"heldout": {"tasks": ["t1"], "top_k": 1, "include_seed": True}},
            }
        )


@pytest.mark.parametrize(
    ("top_k", "tasks", "rounds", "agents", "cost"),
    [
        (2, 30, 1, None, 60),  # every chosen agent on every task
        (8, 30, 3, None, 8 * 10 + 4 * 10 + 2 * 10),
        (3, 3, 2, None, 3 * 2 + 2 * 1),  # parts of 2 and 1 tasks
        (8, 30, 3, 3, 3 * 10 + 2 * 10 + 1 * 10),  # only 3 agents to choose from
    ],
)
def test_the_held_out_phase_costs_each_round_for_the_agents_still_in(
    top_k: int, tasks: int, rounds: int, agents: int | None, cost: int
) -> None:
    config = HeldoutConfig(tasks=[f"t{i}" for i in range(tasks)], top_k=top_k, rounds=rounds)
    assert phase_cost(config, trials=1, agents=agents) == cost
    assert phase_cost(config, trials=2, agents=agents) == 2 * cost


def test_a_restarted_service_resumes_the_race_where_it_was(any_world: World) -> None:
    world = any_world
    run_id = start_a_raced_run(world)
    agents, round_one = admit_three_racers(world)
    losing = agents[1]
    for job in round_one:
        world.answer(job, resolved=job.agent_id != losing)
    # The service dies before its next tick; a new driver knows only what the database holds.
    world.outbox = RecordingDispatcher()
    world.driver = RunDriver(sessions=world.sessions, dispatcher=world.outbox, interval_s=0.1)
    world.driver.tick()
    world.driver.tick()  # a second tick sends nothing twice
    _, round_two = world.outbox.take()
    assert sorted((job.agent_id, job.task_id) for job in round_two) == sorted(
        (agent, T[3]) for agent in agents if agent != losing
    )
    for job in round_two:
        world.answer(job, resolved=True)
    world.driver.tick()
    assert world.run(run_id).status == "completed"
    assert world.member(run_id, losing).heldout_total == 2


def run_with_a_lucky_child(world: World, choose: str) -> tuple[str, list[str]]:
    """A run choosing its one held-out agent by `choose`: the seed scores 2/3, then its
    children 2/3, a lucky 3/3 and 0/3 (`best` expands the lucky one for the last). Returns the
    run and the children, in order, once the held-out phase has started."""
    run_id = world.start(
        stages=[{"tasks": T[:3]}],
        evaluation={"heldout": {"tasks": T[3:], "top_k": 1, "choose": choose}},
        budget={"max_children": 3},
    )
    answer_all(world, set(T[:2]))
    children = []
    for resolved in (set(T[:2]), set(T[:3]), set()):
        world.driver.tick()
        improve, _ = world.outbox.take()
        children.append(world.make_child(improve[0]))
        answer_all(world, resolved)
    world.driver.tick()
    return run_id, children


def heldout_agents(world: World, run_id: str) -> list[str]:
    with world.sessions() as session:
        started = session.scalars(
            select(Event).where(Event.run_id == run_id, Event.kind == "heldout_started")
        ).one()
    return list(started.payload["agents"])


def test_a_family_choice_scores_the_parent_of_a_lucky_child_on_held_out_tasks(any_world: World) -> None:
    world = any_world
    run_id, children = run_with_a_lucky_child(world, "family")
    lucky, harmed = children[1], children[2]
    assert world.member(run_id, lucky).score == 1.0  # the best own score
    assert world.member(run_id, harmed).parent_id == lucky  # `best` expanded the lucky one
    # The lucky child's parent (the seed or the first child, `best` breaks their tie) has two
    # scored neighbours at 2/3 and 3/3: (2 + 0.5 * 5) / (3 + 0.5 * 6) = 0.75. The lucky child
    # pools 2/3 and its harmed child's 0/3: (3 + 0.5 * 2) / 6 = 0.67.
    assert heldout_agents(world, run_id) == [world.member(run_id, lucky).parent_id]


def test_a_tree_choice_keeps_a_lucky_child_when_the_runs_edits_change_scores_a_lot(
    any_world: World,
) -> None:
    # The family test's run. Its parent-child differences (0, 1/3, 1) are far larger than 3
    # tasks' noise, so `tree` estimates big steps, pools little and keeps the lucky child,
    # where `family`'s fixed half weight moves to its parent.
    world = any_world
    run_id, children = run_with_a_lucky_child(world, "tree")
    assert heldout_agents(world, run_id) == [children[1]]


@pytest.mark.parametrize("choose", ["score", "family", "tree"])
def test_until_held_out_results_come_the_run_names_its_best_as_it_chooses_candidates(
    any_world: World, choose: str
) -> None:
    # Mid-run (the held-out phase started, nothing of it scored) the API's best agent is the
    # agent the run's own estimate ranks first: the lucky 3/3 child by its own score and by
    # `tree`, its parent by `family` (the tests above), never another reading of the same results.
    world = any_world
    run_id, children = run_with_a_lucky_child(world, choose)
    lucky = children[1]
    with world.sessions() as session:
        named = top_agents(session, run_id=run_id, k=2)
    expected = world.member(run_id, lucky).parent_id if choose == "family" else lucky
    assert named[0] == expected
    assert named[:1] == heldout_agents(world, run_id)
    assert len(set(named)) == 2


def test_the_family_estimate_pools_parent_and_children_at_half_weight() -> None:
    members = [
        Scored("seed", None, 3, 4),
        Scored("a", "seed", 4, 4),
        Scored("b", "a", 0, 4),
        Scored("unscored", "a", 0, 0),  # not measured: neither a candidate nor evidence
        Scored("alone", "elsewhere", 1, 2),  # its parent is no member: its own score
    ]
    assert family_estimates(members) == {
        "seed": (3 + 0.5 * 4) / (4 + 0.5 * 4),
        "a": (4 + 0.5 * 3) / (4 + 0.5 * 8),
        "b": (0 + 0.5 * 4) / (4 + 0.5 * 4),
        "alone": 0.5,
    }
    assert family_estimates(members, weight=0.0)["a"] == 1.0


def test_the_bound_of_the_best_of_several_agents_holds_though_it_won_on_the_same_tasks() -> None:
    # 8 agents alike (true score 0.5), each on the same 24 held-out tasks; the one that resolved
    # the most is named best, as a held-out race names its winner.
    rng = random.Random(0)
    runs, above_plain, above_joint = 4000, 0, 0
    for _ in range(runs):
        best = max(sum(rng.random() < 0.5 for _ in range(24)) for _ in range(8))
        above_plain += wilson(best, 24)[0] > 0.5
        above_joint += wilson(best, 24, simultaneous_z(8))[0] > 0.5
    # Its plain 95% lower bound is above its true score in about 1 run of 5, not 1 of 40 ...
    assert above_plain / runs > 0.15
    # ... the bound that holds for all 8 at once covers it in at least 95% of runs.
    assert above_joint / runs < 0.05
    assert simultaneous_z(1) == Z_95 and simultaneous_z(8) == pytest.approx(2.7344, abs=1e-4)
    with pytest.raises(ValueError, match="at least one agent"):
        simultaneous_z(0)


@pytest.mark.parametrize("child_resolves", [2, 1])
def test_a_seed_put_in_the_race_is_named_unless_a_child_resolves_more_held_out_tasks(
    any_world: World, child_resolves: int
) -> None:
    world = any_world
    run_id = world.start(
        stages=[{"tasks": T[:1]}],
        evaluation={"heldout": {"tasks": T[1:4], "top_k": 2, "include_seed": True}},
    )
    answer_all(world, set())  # the seed fails its stage task: it is last by selection score
    children = []
    for _ in range(2):
        world.driver.tick()
        improve, _ = world.outbox.take()
        children.append(world.make_child(improve[0]))
        answer_all(world, {T[0]})
    world.driver.tick()
    _, heldout = world.outbox.take()
    # The top 2 by selection score are the children; the seed takes the second one's place.
    assert sorted({job.agent_id for job in heldout}) == sorted([world.seed, children[0]])
    for job in heldout:
        wins = 1 if job.agent_id == world.seed else child_resolves
        world.answer(job, resolved=T[1:4].index(job.task_id) < wins)
    world.driver.tick()
    assert world.run(run_id).status == "completed"
    named = children[0] if child_resolves > 1 else world.seed  # a tie keeps the seed
    with world.sessions() as session:
        assert top_agents(session, run_id=run_id, k=1) == [named]
        finished = session.scalars(
            select(Event).where(Event.run_id == run_id, Event.kind == "heldout_finished")
        ).one()
        assert finished.payload["best_agent_id"] == named
