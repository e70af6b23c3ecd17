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

from sqlalchemy import ColumnElement, case, func, select
from sqlalchemy.orm import Session

from contracts.events import AgentAdmitted, AgentRejected, StageStopped
from contracts.vocabulary import StageStop
from service import events, lifecycle
from service.db.models import Evaluation, Run, RunAgent, StageScore, Step
from service.driver.reuse import HELDOUT, SELECTION, create_evaluations
from service.lifecycle import EvaluationStatus, MemberStatus
from service.plan import RunPlan
from service.selection.evaluation import Counts, Need, StageOver, StageProgress
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

    The run's evaluation policy (`plan.evaluator`) says what each stage needs; its missing
    evaluations are created (pending, for the driver to send). Returns the verdict once no
    further stage is due, None while results are outstanding; with no stages at all, the verdict
    at once (admitted, unmeasured).
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
        staged = set(tasks)
        progress = StageProgress(
            stage=stage,
            tasks=tasks,
            trials=trials,
            threshold=stages[stage].threshold,
            last=stage + 1 == len(stages),
            done={
                slot: bool(e.resolved)
                for slot, e in existing.items()
                if e.status == EvaluationStatus.DONE and slot[0] in staged
            },
            peers=RunPeers(session, run, member, tasks),
        )
        decision = plan.evaluator.decide(progress)
        if isinstance(decision, Need):
            if all(slot in progress.done for slot in decision.slots):
                raise RuntimeError(
                    f"evaluation policy {plan.evaluator.name!r} needs results {member.agent_id} already has"
                )
            # Missing ones are created, copied where a result can be reused.
            missing = [slot for slot in decision.slots if slot not in existing]
            if missing:
                existing |= create_evaluations(
                    session, run, plan, member, missing, stage=stage, purpose=purpose
                )
            if any(
                slot not in existing or existing[slot].status != EvaluationStatus.DONE
                for slot in decision.slots
            ):
                return None
            continue  # every result it needs is in (copied): let it decide
        threshold = stages[stage].threshold
        session.merge(
            StageScore(
                run_id=run.id,
                agent_id=member.agent_id,
                stage=stage,
                epoch=run.epoch,
                resolved=decision.resolved,
                total=decision.total,
                threshold=threshold,
                passed=decision.passed,
                stop=decision.stop,
            )
        )
        if decision.stop is not None:
            _record_stop(session, run, member, progress, decision)
        if decision.passed and stage + 1 < len(stages):
            member.stage_reached = stage + 1
            continue
        failed_first = None
        if stage == 0 and not decision.passed:
            failed_first = _failed_first(decision, threshold, len(tasks))
        return Verdict(member, list(existing.values()), failed_first)


def _failed_first(decision: StageOver, threshold: float, stage_tasks: int) -> str:
    """Why an agent failed the first stage, in words."""
    if decision.stop is None or decision.stop == StageStop.STAGE_COMPLETE:
        return f"stage 1: {decision.resolved}/{decision.total} resolved, below the threshold {threshold:g}"
    return (
        f"stage 1: {decision.stop} after {decision.tasks} of {stage_tasks} tasks "
        f"({decision.resolved}/{decision.total} resolved; {decision.detail})"
    )


def _record_stop(
    session: Session, run: Run, member: RunAgent, progress: StageProgress, decision: StageOver
) -> None:
    """The stop on the agent's row and in the run's events, in the transaction that decides it."""
    assert decision.stop is not None
    member.race_stop = decision.stop
    events.emit(
        session,
        StageStopped(
            agent_id=member.agent_id,
            step=member.step_number,
            epoch=run.epoch,
            stage=progress.stage,
            reason=decision.stop,
            passed=decision.passed,
            tasks=decision.tasks,
            stage_tasks=len(progress.tasks),
            resolved=decision.resolved,
            evaluations=decision.total,
            low=decision.low if decision.low is not None else 0.0,
            high=decision.high if decision.high is not None else 1.0,
            detail=decision.detail,
        ),
        run_id=run.id,
    )


class RunPeers:
    """`Peers` from the run's rows: finished selection results on `tasks` in the current epoch."""

    def __init__(self, session: Session, run: Run, member: RunAgent, tasks: tuple[str, ...]) -> None:
        self.session, self.run, self.member, self.tasks = session, run, member, tasks

    def _counts(self, *where: ColumnElement[bool]) -> dict[str, Counts]:
        rows = self.session.execute(
            select(
                Evaluation.agent_id,
                func.count(),
                func.sum(case((Evaluation.resolved.is_(True), 1), else_=0)),
            )
            .where(
                Evaluation.run_id == self.run.id,
                Evaluation.epoch == self.run.epoch,
                Evaluation.purpose != HELDOUT,
                Evaluation.status == EvaluationStatus.DONE,
                Evaluation.task_id.in_(self.tasks),
                *where,
            )
            .group_by(Evaluation.agent_id)
        ).all()
        return {agent: Counts(resolved=int(hits or 0), total=int(total)) for agent, total, hits in rows}

    def parent(self) -> Counts | None:
        if self.member.parent_id is None:
            return None
        return self._counts(Evaluation.agent_id == self.member.parent_id).get(self.member.parent_id)

    def admitted(self) -> list[Counts]:
        admitted = select(RunAgent.agent_id).where(
            RunAgent.run_id == self.run.id, RunAgent.status == MemberStatus.ADMITTED
        )
        counts = self._counts(Evaluation.agent_id.in_(admitted), Evaluation.agent_id != self.member.agent_id)
        return [counts[agent] for agent in sorted(counts)]


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
