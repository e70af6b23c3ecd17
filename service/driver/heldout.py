"""The held-out phase: once a run's children are done, its top agents are scored on tasks that
never influenced selection, and the best agent is the one with the highest held-out lower bound.

The phase starts when no step is in flight and no agent is being scored: the `top_k` admitted
agents by selection score (ties: the earlier) are chosen and recorded in a `heldout_started`
event, and their evaluations (purpose `heldout`, each task `trials` times) are created for the
driver to send like any other, within the run's budget. When all are finished, each chosen
agent's `heldout_resolved` / `heldout_total` are set and a `heldout_finished` event names the
best; only then does the run complete. Held-out results are never read by selection, admission
or diagnosis (they filter on purpose `selection`).
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from contracts.events import HeldoutFinished, HeldoutScore, HeldoutStarted, kind_of
from contracts.intervals import wilson
from service import events
from service.db.models import Evaluation, Event, Run, RunAgent
from service.driver.reuse import HELDOUT, create_evaluations
from service.lifecycle import EvaluationStatus, MemberStatus
from service.plan import RunPlan
from service.queries import top_agents
from service.selection.policy import PolicyDefaults, RunScope

STARTED = kind_of(HeldoutStarted)


class HeldOut(PolicyDefaults):
    """The held-out phase as a run policy: its evaluations are kept back from the evaluation
    budget, and the run completes only once its top agents are scored on the held-out set."""

    def __init__(self, session: Session, run: Run, plan: RunPlan) -> None:
        self.session, self.run, self.plan = session, run, plan

    def reserved_evaluations(self, scope: RunScope) -> int:
        # Kept back from max_evaluations, and priced into a reserve of max_usd (budget.reserve_usd).
        return reserve(self.session, self.run, self.plan)

    def may_complete(self, scope: RunScope) -> bool:
        return finished(self.session, self.run, self.plan)


def reserve(session: Session, run: Run, plan: RunPlan) -> int:
    """Held-out evaluations the run will still create: kept out of `budget.max_evaluations`, so
    the steps stop in time for the held-out phase to be paid for. Before the phase starts that
    is its whole cost; after, what its chosen agents still lack (a checkpoint may have scored
    some of them already: `service.driver.checkpoints`)."""
    heldout = plan.heldout
    if heldout is None or heldout.tasks is None:
        return 0
    per_agent = len(heldout.tasks) * plan.trials
    started = _event(session, run, STARTED)
    if started is None:
        return heldout.top_k * per_agent
    chosen = list(started.payload["agents"])
    # What the phase created since it started moves from kept back to spent; what checkpoints
    # had measured before stays kept back, so spent plus kept back never falls (a stopped search
    # does not start again while the phase runs).
    created = _created(session, run, chosen) - int(started.payload.get("measured", 0))
    return max(0, heldout.top_k * per_agent - created)


def _created(session: Session, run: Run, agents: list[str]) -> int:
    return (
        session.scalar(
            select(func.count())
            .select_from(Evaluation)
            .where(
                Evaluation.run_id == run.id, Evaluation.purpose == HELDOUT, Evaluation.agent_id.in_(agents)
            )
        )
        or 0
    )


def scored(session: Session, run: Run, plan: RunPlan, agent_id: str) -> tuple[int, int] | None:
    """The agent's (resolved, total) on the held-out tasks once every one is done; until then,
    None, its missing evaluations created for the driver to send (each task `trials` times)."""
    heldout = plan.heldout
    assert heldout is not None and heldout.tasks is not None
    member = session.get(RunAgent, (run.id, agent_id))
    assert member is not None
    slots = [(task, trial) for task in heldout.tasks for trial in range(plan.trials)]
    existing = {
        (e.task_id, e.trial): e
        for e in session.scalars(
            select(Evaluation).where(
                Evaluation.run_id == run.id,
                Evaluation.agent_id == agent_id,
                Evaluation.purpose == HELDOUT,
            )
        )
    }
    missing = [slot for slot in slots if slot not in existing]
    if missing:
        stage = len(plan.stages)  # after the last stage: held-out evaluations belong to none
        existing |= create_evaluations(session, run, plan, member, missing, stage=stage, purpose=HELDOUT)
    if all(slot in existing and existing[slot].status == EvaluationStatus.DONE for slot in slots):
        return sum(1 for slot in slots if existing[slot].resolved), len(slots)
    return None


def record_score(session: Session, run: Run, agent_id: str, counts: tuple[int, int]) -> None:
    """The agent's held-out result on its row, where the API and the pick read it."""
    member = session.get(RunAgent, (run.id, agent_id))
    assert member is not None
    member.heldout_resolved, member.heldout_total = counts
    session.flush()


def finished(session: Session, run: Run, plan: RunPlan) -> bool:
    """Move the held-out phase on; True once the run may complete (no held-out set, or it is scored)."""
    heldout = plan.heldout
    if heldout is None or heldout.tasks is None:
        return True
    started = _event(session, run, STARTED)
    if started is None:
        chosen = _top(session, run, heldout.top_k)
        measured = _created(session, run, chosen)
        started_now = HeldoutStarted(agents=chosen, tasks=list(heldout.tasks), measured=measured)
        events.emit(session, started_now, run_id=run.id)
        session.flush()
    else:
        chosen = list(started.payload["agents"])
    counts: dict[str, tuple[int, int]] = {}
    for agent_id in chosen:
        result = scored(session, run, plan, agent_id)
        if result is not None:
            counts[agent_id] = result
    if len(counts) < len(chosen):
        return False
    for agent_id, result in counts.items():
        record_score(session, run, agent_id, result)
    best = next(iter(top_agents(session, run_id=run.id, k=1)), None)
    agents = {
        agent_id: HeldoutScore(resolved=resolved, total=total, low=round(wilson(resolved, total)[0], 4))
        for agent_id, (resolved, total) in counts.items()
    }
    events.emit(session, HeldoutFinished(agents=agents, best_agent_id=best), run_id=run.id)
    return True


def _top(session: Session, run: Run, k: int) -> list[str]:
    return list(
        session.scalars(
            select(RunAgent.agent_id)
            .where(
                RunAgent.run_id == run.id,
                RunAgent.status == MemberStatus.ADMITTED,
                RunAgent.score.is_not(None),
            )
            .order_by(RunAgent.score.desc(), RunAgent.created_at, RunAgent.agent_id)
            .limit(k)
        )
    )


def _event(session: Session, run: Run, kind: str) -> Event | None:
    return session.scalar(
        select(Event).where(Event.run_id == run.id, Event.kind == kind).order_by(Event.id).limit(1)
    )
