"""A policy's `Measure` move: more evaluations of an agent already in the run, no new step."""

from __future__ import annotations

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from service.db.models import Evaluation, Run, RunAgent
from service.driver.reuse import HELDOUT, SELECTION, create_evaluations
from service.lifecycle import EvaluationStatus, MemberStatus
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


def rescore_measured(session: Session, run: Run) -> None:
    """An admitted agent's score counts every finished result it has in the epoch, those a
    `Measure` gave it too (held-out ones never). Agents whose score is that already, which is
    every agent of a run whose policy never measures, are left as they are."""
    tallies = {
        agent_id: (int(resolved or 0), int(done))
        for agent_id, resolved, done in session.execute(
            select(
                Evaluation.agent_id,
                func.sum(case((Evaluation.resolved.is_(True), 1), else_=0)),
                func.count(),
            )
            .where(
                Evaluation.run_id == run.id,
                Evaluation.epoch == run.epoch,
                Evaluation.purpose != HELDOUT,
                Evaluation.status == EvaluationStatus.DONE,
            )
            .group_by(Evaluation.agent_id)
        )
    }
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
