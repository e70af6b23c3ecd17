"""The demo's configuration with the real driver, its workers played as the scripted curriculum
answers them (worker/curriculum.py): its held-out tasks are of the kinds the rules teach, so the
pick it names scores above 0 on them. `tests/e2e/test_demo.py` runs the demo itself."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from cli.demo import demo_config
from service.db.models import Event
from service.queries import top_agents
from service.results import reject_step
from tests.service.driver_world import World
from worker.curriculum import DEMO_CURRICULUM, DEMO_HELDOUT, expected_resolved


@pytest.mark.parametrize("children", [1, 4])
def test_the_demos_pick_scores_above_zero_on_its_held_out_tasks(world: World, children: int) -> None:
    config = demo_config(world.seed, children)
    run_id = world.start(**{k: v for k, v in config.items() if k not in ("name", "limits")})
    generation = {world.seed: 0}  # each improvement adds the next rule; the third breaks the agent
    for _ in range(80):
        world.driver.tick()
        if world.run(run_id).status == "completed":
            break
        improve, evaluate = world.outbox.take()
        for job in evaluate:
            solved = expected_resolved(DEMO_CURRICULUM, generation[job.agent_id])
            world.answer(job, resolved=job.task_id in solved)
        for job in improve:
            if generation[job.parent_id] == 2:
                with world.sessions.begin() as session:
                    reject_step(session, step_id=job.step_id, reason="the child does not start")
                continue
            generation[world.make_child(job)] = generation[job.parent_id] + 1
    else:
        raise AssertionError("the demo's run did not complete")
    run = world.run(run_id)
    assert run.stop_reason.startswith(f"budget: max_children reached ({children} of {children} steps")
    with world.sessions() as session:
        pick = top_agents(session, run_id=run_id, k=1)[0]
        scored = session.scalars(
            select(Event).where(Event.run_id == run_id, Event.kind == "checkpoint_scored")
        ).all()
    member = world.member(run_id, pick)
    assert member.heldout_total == len(DEMO_HELDOUT)
    assert member.heldout_resolved is not None and member.heldout_resolved > 0
    assert generation[pick] >= 1  # a child learnt what the seed did not
    assert scored and scored[-1].payload["pick_agent_id"] == pick
