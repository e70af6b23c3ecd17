"""Selection sees selection evaluations only: an agent's held-out results (the held-out phase,
checkpoints) never move the scores and clade totals its parent draw reads."""

from __future__ import annotations

from sqlalchemy import select

from contracts.vocabulary import EvaluationPurpose
from service.db.models import Evaluation, Run
from service.driver.parents import candidates
from service.lifecycle import EvaluationStatus
from tests.service.driver_world import T, World


def test_held_out_results_never_reach_the_candidates(world: World) -> None:
    run_id = world.start(stages=[{"tasks": T[:2], "threshold": 0.0}], budget={"max_children": 1})
    world.driver.tick()
    _, evaluate = world.outbox.take()
    for job, resolved in zip(evaluate, [True, False], strict=True):
        world.answer(job, resolved=resolved)
    world.driver.tick()  # the seed is admitted at 1/2
    with world.sessions() as session:
        run = session.get(Run, run_id)
        assert run is not None
        (before,) = candidates(session, run)
    assert (before.clade_resolved, before.clade_attempted) == (1, 2)

    with world.sessions.begin() as session:
        done = session.scalars(select(Evaluation).where(Evaluation.run_id == run_id)).first()
        assert done is not None
        for n in range(3):  # three held-out tasks, all resolved
            session.add(
                Evaluation(
                    id=f"heldout{n}",
                    run_id=run_id,
                    agent_id=done.agent_id,
                    task_id=f"heldout-task-{n}",
                    stage=done.stage,
                    status=EvaluationStatus.DONE,
                    resolved=True,
                    epoch=done.epoch,
                    purpose=EvaluationPurpose.HELDOUT,
                )
            )
    with world.sessions() as session:
        run = session.get(Run, run_id)
        assert run is not None
        (after,) = candidates(session, run)
    assert (after.score, after.clade_resolved, after.clade_attempted) == (0.5, 1, 2)
