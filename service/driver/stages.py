"""Staged evaluation and admission of one agent in one run.

An agent is evaluated on stage 0's tasks; if it resolves at least that stage's
threshold it goes on to the next stage, and so on. Its score is the fraction
resolved over every task it was evaluated on, each `evaluation.trials` times (a result of
identical code may be reused: `service.driver.reuse`). A child is admitted as a parent
candidate only if it passed stage 0; the seed is always a candidate.

Stages, evaluations and stage scores belong to the run's current epoch (its utility
version, `service.driver.epochs`): an agent re-scored in a new epoch goes through that
epoch's stages with evaluations of purpose "rescore".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from contracts.events import AgentAdmitted, AgentRejected
from service import events, lifecycle
from service.db.models import Evaluation, Run, RunAgent, StageScore, Step
from service.driver.reuse import HELDOUT, SELECTION, create_evaluations
from service.lifecycle import EvaluationStatus, MemberStatus
from service.plan import RunPlan
from service.selection.policy import StageView


@dataclass(frozen=True)
class Verdict:
    """An agent whose evaluation is over: every evaluation it had, and why it failed stage 1 if it did."""

    member: RunAgent
    evaluations: list[Evaluation]
    failed_first: str | None


def advance(
    session: Session,
    run: Run,
    plan: RunPlan,
    member: RunAgent,
    *,
    purpose: str = SELECTION,
    stages: Sequence[StageView] | None = None,
) -> Verdict | None:
    """Move an agent through the current epoch's stages (or `stages`, a policy's own for a new
    agent) as far as its finished evaluations allow.

    The current stage's missing evaluations are created (pending, for the driver to send).
    Returns the verdict once no further stage is due, None while results are outstanding; with
    no stages at all, the verdict at once (admitted, unmeasured).
    """
    if stages is None:
        stages = plan.epoch(run.epoch).stages
    if not stages:
        return Verdict(member, [], None)
    trials = plan.config.evaluation.trials
    while True:
        stage = member.stage_reached
        tasks = stages[stage].task_ids
        existing = {
            (e.task_id, e.trial): e
            for e in session.scalars(
                select(Evaluation).where(
                    Evaluation.run_id == run.id,
                    Evaluation.agent_id == member.agent_id,
                    Evaluation.epoch == run.epoch,
                    Evaluation.purpose != HELDOUT,  # the held-out phase never feeds the stages
                )
            )
        }
        # Each task `trials` times; missing ones are created, copied where a result can be reused.
        slots = [(task, trial) for task in tasks for trial in range(trials)]
        missing = [slot for slot in slots if slot not in existing]
        if missing:
            existing |= create_evaluations(session, run, plan, member, missing, stage=stage, purpose=purpose)
        if any(slot not in existing or existing[slot].status != EvaluationStatus.DONE for slot in slots):
            return None
        resolved = sum(1 for slot in slots if existing[slot].resolved)
        total = len(slots)
        threshold = stages[stage].threshold
        passed = resolved / total >= threshold
        session.merge(
            StageScore(
                run_id=run.id,
                agent_id=member.agent_id,
                stage=stage,
                epoch=run.epoch,
                resolved=resolved,
                total=total,
                threshold=threshold,
                passed=passed,
            )
        )
        if passed and stage + 1 < len(stages):
            member.stage_reached = stage + 1
            continue
        failed_first = None
        if stage == 0 and not passed:
            failed_first = f"stage 1: {resolved}/{total} resolved, below the threshold {threshold:g}"
        return Verdict(member, list(existing.values()), failed_first)


def admit(session: Session, run: Run, verdict: Verdict) -> None:
    """Score the agent and admit it, or reject it with the reason (the seed is always admitted).

    The step that made the agent ends the same way.
    """
    member, evaluations = verdict.member, verdict.evaluations
    member.resolved = sum(1 for e in evaluations if e.resolved)
    member.attempted = len(evaluations)
    member.score = member.resolved / member.attempted if evaluations else None  # not measured yet
    step = session.scalar(select(Step).where(Step.run_id == run.id, Step.child_id == member.agent_id))
    if verdict.failed_first is None or member.agent_id == run.seed_agent_id:
        lifecycle.admit_member(member)
        member.reason = None
        if step is not None:
            lifecycle.admit_step(step)
    else:
        lifecycle.reject_member(member)
        member.reason = verdict.failed_first
        if step is not None:
            lifecycle.reject_step(step)
    if step is not None:
        step.reason, step.finished_at = member.reason, datetime.now(UTC)
    verdict_of = AgentAdmitted if member.status == MemberStatus.ADMITTED else AgentRejected
    events.emit(
        session,
        verdict_of(
            agent_id=member.agent_id, score=member.score, reason=member.reason, step=member.step_number
        ),
        run_id=run.id,
    )
