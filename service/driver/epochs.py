"""Epochs: the run's utility (its stage set and judge) changes at fixed points, versioned.

Epoch 0 is the run's `stages` with test-based grading. Epoch n (config `epochs[n-1]`) begins at
its **boundary**: the first driver tick in which

  (a) the steps opened so far number at least its `after_steps`, and
  (b) nothing of the old epoch is in flight: no step pending or evaluating, no agent
      evaluating, no evaluation pending (re-scorings of the epoch before included).

Once (a) holds no further step is opened until (b) does, so no child of the old epoch is ever
scored under the new utility. At the boundary `runs.epoch` goes up by one, an `epoch_started`
event records the new utility, and the `rescore_top_k` admitted agents with the best old-epoch
scores (ties: the earlier step first), and the seed (the baseline, and so a candidate exists in
every epoch), are scored again: they go through the new epoch's stages with evaluations of
`epoch` n and purpose "rescore". A re-scored agent stays admitted whatever it scores (it was
admitted once); its old-epoch stage scores stay in `stage_scores` under their epoch.

From the boundary on, selection sees current-epoch scores only: a candidate is an admitted
agent whose `run_agents.epoch` is the run's epoch (its `score`, `resolved` and `attempted`
are then that epoch's). Agents not re-scored keep their old epoch's score, labelled with it,
and are never parents again. Until the first re-scored agent finishes, no step opens.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from contracts.events import AgentRescored, EpochStarted, Utility
from contracts.vocabulary import EvaluationPurpose
from service import events, lifecycle
from service.db.models import Evaluation, Run, RunAgent, Step
from service.driver.stages import Verdict, advance
from service.lifecycle import EvaluationStatus, MemberStatus
from service.plan import EpochPlan, RunPlan
from service.selection.policy import PolicyDefaults, RunScope

RESCORE = EvaluationPurpose.RESCORE
NO_LIMIT = 10**9


class Epochs(PolicyDefaults):
    """Epochs as a run policy: they move after admission, hold steps back before a boundary,
    and keep the run open while re-scored agents are being scored."""

    def __init__(self, session: Session, run: Run, plan: RunPlan) -> None:
        self.session, self.run, self.plan = session, run, plan

    def after_admission(self, scope: RunScope) -> None:
        move(self.session, self.run, self.plan, scope.steps_opened)

    def steps_allowed(self, scope: RunScope) -> int | None:
        allowed = steps_before_boundary(self.run, self.plan, scope.steps_opened)
        return None if allowed == NO_LIMIT else allowed

    def may_complete(self, scope: RunScope) -> bool:
        return not rescoring(self.session, self.run)


def steps_before_boundary(run: Run, plan: RunPlan, opened: int) -> int:
    """How many more steps may open before the next epoch's boundary (no limit when none is ahead)."""
    if run.epoch + 1 >= len(plan.epochs):
        return NO_LIMIT
    return max(0, plan.epoch(run.epoch + 1).after_steps - opened)


def move(session: Session, run: Run, plan: RunPlan, opened: int) -> None:
    """Re-scored agents as far as their results allow, then the next boundary if it is due."""
    for member in _rescoring(session, run):
        _rescore(session, run, plan, member)
    if steps_before_boundary(run, plan, opened) == 0 and not _old_work_in_flight(session, run):
        begin(session, run, plan, opened)


def begin(session: Session, run: Run, plan: RunPlan, opened: int) -> None:
    """Cross into the next epoch: record it and start re-scoring its agents."""
    old = run.epoch
    epoch = plan.epoch(old + 1)
    ranked = session.scalars(
        select(RunAgent)
        .where(
            RunAgent.run_id == run.id,
            RunAgent.status == MemberStatus.ADMITTED,
            RunAgent.epoch == old,
            RunAgent.score.is_not(None),
        )
        .order_by(RunAgent.score.desc(), RunAgent.step_number, RunAgent.agent_id)
        .limit(epoch.rescore_top_k)
    ).all()
    chosen = list(ranked)
    seed = session.get(RunAgent, (run.id, run.seed_agent_id))
    if seed is not None and seed.status == MemberStatus.ADMITTED and seed not in chosen:
        chosen.append(seed)
    run.epoch = epoch.number
    started = EpochStarted(
        epoch=epoch.number,
        after_steps=epoch.after_steps,
        steps_opened=opened,
        utility=Utility.model_validate(utility(epoch)),
        rescore=[member.agent_id for member in chosen],
    )
    events.emit(session, started, run_id=run.id)
    for member in chosen:
        member.stage_reached = 0
        _rescore(session, run, plan, member)


def most_evaluations(plan: RunPlan) -> int:
    """Every agent scored in each epoch on every task of its stages: the children whose steps
    open in it, the seed in epoch 0, and at most rescore_top_k + 1 re-scored agents later."""
    total = 0
    for epoch in plan.epochs:
        following = plan.epochs[epoch.number + 1] if epoch.number + 1 < len(plan.epochs) else None
        last_step = following.after_steps if following is not None else plan.budget.max_children
        agents = last_step - epoch.after_steps
        agents += 1 if epoch.number == 0 else min(epoch.rescore_top_k + 1, epoch.after_steps + 1)
        total += agents * sum(len(stage.task_ids) for stage in epoch.stages)
    return total


def utility(epoch: EpochPlan) -> dict[str, Any]:
    """An epoch's utility as events and the API show it."""
    return {
        "version": epoch.number,
        "stages": [{"tasks": len(stage.task_ids), "threshold": stage.threshold} for stage in epoch.stages],
        "judge": None if epoch.judge is None else epoch.judge.model_dump(mode="json"),
    }


def _rescore(session: Session, run: Run, plan: RunPlan, member: RunAgent) -> None:
    verdict = advance(session, run, plan, member, purpose=RESCORE)
    if verdict is not None:
        _scored(session, run, verdict)


def _scored(session: Session, run: Run, verdict: Verdict) -> None:
    """The re-scored agent's current-epoch score: it is a candidate of this epoch from now on."""
    member = verdict.member
    member.resolved = sum(1 for e in verdict.evaluations if e.resolved)
    member.attempted = len(verdict.evaluations)
    member.score = member.resolved / member.attempted if verdict.evaluations else 0.0
    member.epoch = run.epoch
    rescored = AgentRescored(
        agent_id=member.agent_id,
        epoch=run.epoch,
        score=member.score,
        resolved=member.resolved,
        attempted=member.attempted,
    )
    events.emit(session, rescored, run_id=run.id)


def rescoring(session: Session, run: Run) -> bool:
    """Whether re-scored agents are still being scored (a run waits for them before it completes)."""
    return bool(_rescoring(session, run))


def _rescoring(session: Session, run: Run) -> list[RunAgent]:
    """Admitted agents with re-scoring evaluations in the current epoch and no score in it yet."""
    if run.epoch == 0:
        return []  # nothing is re-scored in the first epoch (and most runs have no other)
    rescored = (
        select(Evaluation.agent_id)
        .where(Evaluation.run_id == run.id, Evaluation.epoch == run.epoch, Evaluation.purpose == RESCORE)
        .distinct()
    )
    return list(
        session.scalars(
            select(RunAgent)
            .where(
                RunAgent.run_id == run.id,
                RunAgent.status == MemberStatus.ADMITTED,
                RunAgent.epoch < run.epoch,
                RunAgent.agent_id.in_(rescored),
            )
            .order_by(RunAgent.agent_id)
        )
    )


def _old_work_in_flight(session: Session, run: Run) -> bool:
    steps = session.scalar(
        select(func.count())
        .select_from(Step)
        .where(Step.run_id == run.id, Step.status.in_(lifecycle.STEP_IN_FLIGHT))
    )
    members = session.scalar(
        select(func.count())
        .select_from(RunAgent)
        .where(RunAgent.run_id == run.id, RunAgent.status == MemberStatus.EVALUATING)
    )
    evaluations = session.scalar(
        select(func.count())
        .select_from(Evaluation)
        .where(Evaluation.run_id == run.id, Evaluation.status == EvaluationStatus.PENDING)
    )
    return bool(steps or members or evaluations)
