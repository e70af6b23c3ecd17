"""Staged evaluation and admission of one agent in one run.

An agent is evaluated on stage 0's tasks; if it resolves at least that stage's
threshold it goes on to the next stage, and so on. Its score is the fraction
resolved over every task it was evaluated on. A child is admitted as a parent
candidate only if it passed stage 0; the seed is always a candidate.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.db.models import Evaluation, Event, Run, RunAgent, StageScore, Step
from service.driver.plan import RunPlan
from service.runs import new_id

EvaluationSender = Callable[[Evaluation], None]


def advance(session: Session, run: Run, plan: RunPlan, member: RunAgent, send: EvaluationSender) -> None:
    """Move an evaluating agent forward as far as its finished evaluations allow."""
    while True:
        stage = member.stage_reached
        tasks = plan.stages[stage].task_ids
        existing = {
            e.task_id: e
            for e in session.scalars(
                select(Evaluation).where(Evaluation.run_id == run.id, Evaluation.agent_id == member.agent_id)
            )
        }
        missing = [task for task in tasks if task not in existing]
        for task in missing:
            evaluation = Evaluation(
                id=new_id(),
                run_id=run.id,
                agent_id=member.agent_id,
                task_id=task,
                stage=stage,
                status="pending",
            )
            session.add(evaluation)
            session.flush()
            send(evaluation)
        if missing or any(existing[task].status != "done" for task in tasks):
            return
        resolved = sum(1 for task in tasks if existing[task].resolved)
        threshold = plan.stages[stage].threshold
        passed = resolved / len(tasks) >= threshold
        session.merge(
            StageScore(
                run_id=run.id,
                agent_id=member.agent_id,
                stage=stage,
                resolved=resolved,
                total=len(tasks),
                threshold=threshold,
                passed=passed,
            )
        )
        if passed and stage + 1 < len(plan.stages):
            member.stage_reached = stage + 1
            continue
        failed_first = None
        if stage == 0 and not passed:
            failed_first = f"stage 1: {resolved}/{len(tasks)} resolved, below the threshold {threshold:g}"
        finish(session, run, member, list(existing.values()), failed_first)
        return


def finish(
    session: Session, run: Run, member: RunAgent, evaluations: list[Evaluation], failed_first: str | None
) -> None:
    """Score the agent and admit it, or reject it with the reason (the seed is always admitted)."""
    member.score = sum(1 for e in evaluations if e.resolved) / len(evaluations) if evaluations else 0.0
    if failed_first is None or member.agent_id == run.seed_agent_id:
        member.status, member.reason = "admitted", None
    else:
        member.status, member.reason = "rejected", failed_first
    step = session.scalar(select(Step).where(Step.run_id == run.id, Step.child_id == member.agent_id))
    if step is not None:
        step.status = member.status
        step.reason = member.reason
        step.finished_at = datetime.now(UTC)
    session.add(
        Event(
            run_id=run.id,
            kind=f"agent_{member.status}",
            payload={
                "agent_id": member.agent_id,
                "score": member.score,
                "reason": member.reason,
                "step": member.step_number,
            },
        )
    )
