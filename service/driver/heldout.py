"""The held-out phase: once a run's children are done, its top agents are scored on tasks that
never influenced selection, and the best agent is the one with the highest held-out lower bound.

The phase starts when no step is in flight and no agent is being scored: the `top_k` admitted
agents by selection score (ties: the earlier) are chosen and recorded in a `heldout_started`
event, and their evaluations (purpose `heldout`, each task `trials` times) are created for the
driver to send like any other, within the run's budget. When all are finished, each chosen
agent's `heldout_resolved` / `heldout_total` are set and a `heldout_finished` event names the
best; only then does the run complete. Held-out results are never read by selection, admission
or diagnosis (they filter on purpose `selection`).

The named best won a comparison on these very tasks, so its plain 95% bound would sit above its
true score too often: every held-out interval holds for all the run's held-out agents at once
(`contracts.intervals.simultaneous_z`; their number is each row's `heldout_compared`).

With `rounds` > 1 the phase is a race (successive halving): the tasks are sent in that many
equal parts, and after each part but the last only the better half of the agents still in go
on (by held-out tasks resolved so far; ties: the chosen order). Who goes on is worked out again
each tick from the evaluations done, so a restart resumes the race where it was. An agent
stopped early keeps its partial score, and the pick prefers agents measured on more held-out
tasks (`service.queries.top_agents`), so a finalist is named.
"""

from __future__ import annotations

import math

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from contracts.config import HeldoutConfig
from contracts.events import HeldoutFinished, HeldoutScore, HeldoutStarted, kind_of
from contracts.scores import interval
from service import events
from service.db.models import Evaluation, Run, RunAgent
from service.driver.reuse import HELDOUT, create_evaluations
from service.lifecycle import EvaluationStatus, MemberStatus
from service.plan import RunPlan
from service.queries import by_estimate, top_agents
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
    whole = phase_cost(heldout, trials=plan.trials)
    started = events.first(session, run_id=run.id, kind=STARTED)
    if started is None:
        return whole
    chosen = list(started.payload["agents"])
    # What the phase created since it started moves from kept back to spent; what checkpoints
    # had measured before stays kept back, so spent plus kept back never falls (a stopped search
    # does not start again while the phase runs).
    created = _created(session, run, chosen) - int(started.payload.get("measured", 0))
    return max(0, whole - created)


def phase_cost(heldout: HeldoutConfig, *, trials: int, agents: int | None = None) -> int:
    """The held-out evaluations of the phase for `agents` chosen (default `top_k`): every task
    for each, or with `rounds` > 1 each part of the tasks for the agents still in by then."""
    assert heldout.tasks is not None
    alive = heldout.top_k if agents is None else min(agents, heldout.top_k)
    total, start = 0, 0
    for end in round_ends(len(heldout.tasks), heldout.rounds):
        total += alive * (end - start) * trials
        alive, start = math.ceil(alive / 2), end
    return total


def round_ends(tasks: int, rounds: int) -> list[int]:
    """Where each round's part of the held-out tasks ends (the last at `tasks`)."""
    return [round((number + 1) * tasks / rounds) for number in range(rounds)]


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


def scored(
    session: Session, run: Run, plan: RunPlan, agent_id: str, tasks: list[str] | None = None
) -> tuple[int, int] | None:
    """The agent's (resolved, total) on the held-out tasks (or those of them in `tasks`) once
    every one is done; until then, None, its missing evaluations created for the driver to send
    (each task `trials` times)."""
    heldout = plan.heldout
    assert heldout is not None and heldout.tasks is not None
    member = session.get(RunAgent, (run.id, agent_id))
    assert member is not None
    slots = [
        (task, trial) for task in (heldout.tasks if tasks is None else tasks) for trial in range(plan.trials)
    ]
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


def record_scores(session: Session, run: Run, scores: dict[str, tuple[int, int]]) -> int:
    """Each agent's held-out result on its row, where the API and the pick read it. Returns how
    many of the run's agents now have one: the pick compares them all, so every one's interval
    is widened to hold for all of them at once (`heldout_compared`)."""
    for agent_id, (resolved, total) in scores.items():
        member = session.get(RunAgent, (run.id, agent_id))
        assert member is not None
        member.heldout_resolved, member.heldout_total = resolved, total
    session.flush()
    measured = session.scalars(
        select(RunAgent).where(RunAgent.run_id == run.id, RunAgent.heldout_total > 0)
    ).all()
    for member in measured:
        member.heldout_compared = len(measured)
    session.flush()
    return len(measured)


def finished(session: Session, run: Run, plan: RunPlan) -> bool:
    """Move the held-out phase on; True once the run may complete (no held-out set, or it is scored)."""
    heldout = plan.heldout
    if heldout is None or heldout.tasks is None:
        return True
    started = events.first(session, run_id=run.id, kind=STARTED)
    if started is None:
        chosen = _top(session, run, heldout.top_k, choose=heldout.choose)
        if heldout.include_seed:
            chosen = with_seed(chosen, run.seed_agent_id, heldout.top_k)
        measured = _created(session, run, chosen)
        started_now = HeldoutStarted(agents=chosen, tasks=list(heldout.tasks), measured=measured)
        events.emit(session, started_now, run_id=run.id)
        session.flush()
    else:
        chosen = list(started.payload["agents"])
    counts = _race(session, run, plan, chosen)
    if counts is None:
        return False
    compared = record_scores(session, run, counts)
    best = next(iter(top_agents(session, run_id=run.id, k=1)), None)
    agents = {
        agent_id: HeldoutScore(resolved=resolved, total=total, low=_low(resolved, total, compared))
        for agent_id, (resolved, total) in counts.items()
    }
    events.emit(session, HeldoutFinished(agents=agents, best_agent_id=best), run_id=run.id)
    return True


def _low(resolved: int, total: int, compared: int) -> float:
    """The lower bound an event reports: the same interval as the API's (0 for no task)."""
    low, _ = interval(resolved, total, compared=compared)
    return round(low or 0.0, 4)


def _race(session: Session, run: Run, plan: RunPlan, chosen: list[str]) -> dict[str, tuple[int, int]] | None:
    """Each chosen agent's (resolved, total) once the phase is over (partial for those stopped
    in a round); None while a round is still being scored."""
    heldout = plan.heldout
    assert heldout is not None and heldout.tasks is not None
    counts: dict[str, tuple[int, int]] = {}
    alive = chosen
    ends = round_ends(len(heldout.tasks), heldout.rounds)
    for number, end in enumerate(ends):
        results = {agent_id: scored(session, run, plan, agent_id, heldout.tasks[:end]) for agent_id in alive}
        done = {agent_id: result for agent_id, result in results.items() if result is not None}
        if len(done) < len(alive):
            return None
        counts |= done
        if number < len(ends) - 1:
            # Every agent still in ran the same tasks, so counts compare; ties keep the chosen order.
            ranked = sorted(alive, key=lambda agent_id: -done[agent_id][0])
            going_on = set(ranked[: math.ceil(len(alive) / 2)])
            alive = [agent_id for agent_id in alive if agent_id in going_on]
    return counts


def with_seed(chosen: list[str], seed: str, k: int) -> list[str]:
    """`chosen` with the seed first (a round's ties keep this order, so the seed goes on from a
    tie), the last of the others giving way if need be."""
    return [seed, *[agent_id for agent_id in chosen if agent_id != seed]][:k]


def _top(session: Session, run: Run, k: int, *, choose: str) -> list[str]:
    """The `k` admitted agents by selection score (ties: the earlier), or by an estimate from
    their relatives' results too (`service.queries.by_estimate`)."""
    if choose == "score":
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
    return by_estimate(session, run_id=run.id, choose=choose)[:k]
