"""A policy's `Measure` move: more evaluations of an agent already in the run, no new step."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.db.models import Evaluation, Run, RunAgent
from service.driver.reuse import HELDOUT, SELECTION, create_evaluations
from service.driver.tallies import selection_tallies
from service.lifecycle import MemberStatus
from service.plan import RunPlan
from service.selection.policy import Measure


def measure(session: Session, run: Run, plan: RunPlan, move: Measure) -> int:
    """Create the evaluations `move` asks for that the agent does not have yet in this epoch
    (each task `evaluation.trials` times), pending for the driver to send like any other; how
    many of them will run (copies of identical code's results are free).

    Raises ValueError naming the agent or the tasks when the policy asks for what the run
    cannot measure: an agent not admitted in it, or tasks outside its current stages."""
    member = session.get(RunAgent, (run.id, move.agent_id))
    if member is None or member.status != MemberStatus.ADMITTED:
        raise ValueError(
            f"the policy asked to measure {move.agent_id}, which is not admitted in run {run.id}"
        )
    staged = {task for stage in plan.epoch(run.epoch).stages for task in stage.task_ids}
    unknown = [task for task in move.task_ids if task not in staged]
    if unknown:
        raise ValueError(f"the policy asked to measure tasks outside the run's stages: {', '.join(unknown)}")
    existing = {
        (task, trial)
        for task, trial in session.execute(
            select(Evaluation.task_id, Evaluation.trial).where(
                Evaluation.run_id == run.id,
                Evaluation.agent_id == member.agent_id,
                Evaluation.epoch == run.epoch,
                Evaluation.purpose != HELDOUT,
            )
        )
    }
    slots = [(task, trial) for task in dict.fromkeys(move.task_ids) for trial in range(plan.trials)]
    missing = [slot for slot in slots if slot not in existing]
    if not missing:
        return 0
    created = create_evaluations(
        session, run, plan, member, missing, stage=member.stage_reached, purpose=SELECTION
    )
    return sum(1 for evaluation in created.values() if evaluation.reused_from is None)


def rescore_measured(session: Session, run: Run) -> None:
    """An admitted agent's score counts every finished result it has in the epoch, those a
    `Measure` gave it too (held-out ones never). Agents whose score is that already, which is
    every agent of a run whose policy never measures, are left as they are."""
    tallies = selection_tallies(session, run)
    members = session.scalars(
        select(RunAgent).where(
            RunAgent.run_id == run.id,
            RunAgent.status == MemberStatus.ADMITTED,
            RunAgent.epoch == run.epoch,
            RunAgent.agent_id.in_(list(tallies)),
        )
    )
    for member in members:
        resolved, done = tallies[member.agent_id]
        if member.attempted != done or member.resolved != resolved:
            member.resolved, member.attempted, member.score = resolved, done, resolved / done
