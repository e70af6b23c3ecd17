"""A policy's `Measure` move: more evaluations of an agent already in the run, no new step."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.db.models import Evaluation, Run, RunAgent
from service.driver.reuse import HELDOUT, SELECTION, create_evaluations
from service.lifecycle import MemberStatus
from service.plan import RunPlan
from service.selection.policy import Measure


def measure(session: Session, run: Run, plan: RunPlan, move: Measure) -> None:
    """Create the evaluations `move` asks for that the agent does not have yet in this epoch
    (each task `evaluation.trials` times), pending for the driver to send like any other.

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
    if missing:
        create_evaluations(session, run, plan, member, missing, stage=member.stage_reached, purpose=SELECTION)
