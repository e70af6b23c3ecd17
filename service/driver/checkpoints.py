"""Honest picks at any time: at set fractions of the budget, the run's best agent so far is
scored on the held-out tasks, so a run stopped early still names a well-measured agent.

`evaluation.checkpoints` lists fractions of the run's budget (`budget.max_evaluations`, or
`budget.max_usd`; with both, whichever is nearer its end). When the spend crosses one:

    reached   the run's best agent by the rule its held-out phase chooses candidates by
              (`evaluation.heldout.choose`): with `score`, the admitted agent with the highest
              Wilson lower bound on its selection tasks (ties: the higher score, then the
              earlier); with `family` or `tree`, the one the run names until held-out results
              exist (`service.queries.by_estimate`). It is named in a `checkpoint_reached`
              event, and its held-out evaluations are created for the driver to send (none
              for an agent a checkpoint or the held-out phase measured already)
    scored    once they are done, its held-out result is on its row and a `checkpoint_scored`
              event names the run's pick: the agent with the highest held-out lower bound
              (`service.queries.top_agents`, which the API's `best_agent_id` reads)

Checkpoints the search never reaches (it stopped at `max_children`, or for the evaluations the
checkpoints keep back) are reached when it stops, before the held-out phase. Every checkpoint
not yet reached keeps one full held-out scoring back from the budget (`reserved_evaluations`),
so the steps stop in time for it. The state is the run's events and rows only: a restarted
service carries on from them.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from contracts.events import CheckpointReached, CheckpointScored, kind_of
from contracts.intervals import wilson
from contracts.scores import interval
from service import events
from service.db.models import Evaluation, Run, RunAgent
from service.driver import budget, heldout
from service.driver.reuse import HELDOUT
from service.lifecycle import MemberStatus
from service.plan import RunPlan
from service.queries import by_estimate, top_agents
from service.selection.policy import PolicyDefaults, RunScope

REACHED = kind_of(CheckpointReached)
SCORED = kind_of(CheckpointScored)


class Checkpoints(PolicyDefaults):
    """The checkpoints as a run policy (nothing to do for a run without them)."""

    def __init__(self, session: Session, run: Run, plan: RunPlan) -> None:
        self.session, self.run, self.plan = session, run, plan

    @property
    def active(self) -> bool:
        return bool(self.plan.config.evaluation.checkpoints) and self.plan.heldout is not None

    def after_admission(self, scope: RunScope) -> None:
        if self.active:
            self._move(final=False)

    def reserved_evaluations(self, scope: RunScope) -> int:
        if not self.active:
            return 0
        tasks = self.plan.heldout.tasks if self.plan.heldout is not None else None
        per_scoring = len(tasks or []) * self.plan.trials
        reached = _reached(self.session, self.run)
        # One reached as the search stopped stays kept back: what it spent is counted as spent
        # now, so spent plus kept back never falls and the stopped search does not start again.
        ahead = [f for f in self.plan.config.evaluation.checkpoints if f not in reached or reached[f].final]
        # A reached checkpoint whose evaluations are not all created yet (a twin was pending).
        agents = {p.agent_id for p in reached.values() if p.agent_id is not None}
        owing = sum(self._missing(agent) for agent in agents)
        return len(ahead) * per_scoring + owing

    def may_complete(self, scope: RunScope) -> bool:
        if not self.active:
            return True
        return self._move(final=True)

    def _move(self, *, final: bool) -> bool:
        """Reach the checkpoints the spend crossed (all of them if `final`), score what is done;
        True once every checkpoint is reached and scored."""
        session, run, plan = self.session, self.run, self.plan
        reached = _reached(session, run)
        spent = spent_fraction(plan, budget.spent(session, run))
        for fraction in plan.config.evaluation.checkpoints:
            if fraction in reached or not (final or spent >= fraction):
                continue
            agent, low = checkpoint_agent(session, run, choose=self.plan.choose)
            if agent is None and not final:
                break  # nothing admitted yet: reached once there is an agent to score
            payload = CheckpointReached(
                fraction=fraction,
                spent=round(spent, 4),
                agent_id=agent,
                selection_low=None if low is None else round(low, 4),
                chosen_by=self.plan.choose,
                final=final and spent < fraction,
            )
            events.emit(session, payload, run_id=run.id)
            reached[fraction] = payload
        session.flush()
        done = {p["fraction"] for p in events.recorded(session, run_id=run.id, kind=SCORED)}
        complete = len(reached) == len(plan.config.evaluation.checkpoints)
        for fraction, payload in reached.items():
            agent_id = payload.agent_id
            if fraction in done or agent_id is None:
                continue
            counts = heldout.scored(session, run, plan, agent_id)
            if counts is None:
                complete = False
                continue
            compared = heldout.record_scores(session, run, {agent_id: counts})
            pick = top_agents(session, run_id=run.id, k=1)[0]
            low, high = interval(*counts, compared=compared)
            assert low is not None and high is not None  # counts hold at least one task
            scored = CheckpointScored(
                fraction=fraction,
                agent_id=agent_id,
                resolved=counts[0],
                total=counts[1],
                low=round(low, 4),
                high=round(high, 4),
                pick_agent_id=pick,
            )
            events.emit(session, scored, run_id=run.id)
        session.flush()
        return complete

    def _missing(self, agent_id: str) -> int:
        tasks = self.plan.heldout.tasks if self.plan.heldout is not None else None
        created = self.session.scalars(
            select(Evaluation.id).where(
                Evaluation.run_id == self.run.id,
                Evaluation.agent_id == agent_id,
                Evaluation.purpose == HELDOUT,
            )
        ).all()
        return max(0, len(tasks or []) * self.plan.trials - len(created))


def kept_back_at_start(plan: RunPlan) -> int:
    """The evaluations a run keeps back from `budget.max_evaluations` before it has sent any: the
    held-out phase's whole cost (`heldout.reserve`) and one held-out scoring per checkpoint
    (`Checkpoints.reserved_evaluations`), what its first tick keeps back."""
    config = plan.heldout
    if config is None or config.tasks is None:
        return 0
    scorings = len(plan.config.evaluation.checkpoints) * len(config.tasks) * plan.trials
    return heldout.phase_cost(config, trials=plan.trials) + scorings


def spent_fraction(plan: RunPlan, used: budget.Spent) -> float:
    """How far the run is through its budget: the larger of its evaluations' and its money's share."""
    limits = plan.budget
    shares = [0.0]
    if limits.max_evaluations is not None:
        shares.append(used.evaluations / limits.max_evaluations)
    if limits.max_usd is not None:
        shares.append(used.usd / limits.max_usd)
    return max(shares)


def checkpoint_agent(session: Session, run: Run, *, choose: str) -> tuple[str | None, float | None]:
    """The agent a checkpoint scores and its Wilson lower bound on its selection evaluations: by
    that bound with `choose: score`; else the current epoch's best by the run's estimate, the
    agent the run names until held-out results exist (a checkpoint checks what the run would pick)."""
    if choose == "score":
        return best_by_selection_low(session, run)
    members = {m.agent_id: m for m in _measured(session, run)}
    for agent_id in by_estimate(session, run_id=run.id, choose=choose):
        if (member := members.get(agent_id)) is not None:
            return agent_id, wilson(member.resolved or 0, member.attempted or 0)[0]
    return None, None


def best_by_selection_low(session: Session, run: Run) -> tuple[str | None, float | None]:
    """The admitted agent of the run's current epoch with the highest Wilson lower bound on its
    selection evaluations (ties: the higher score, then the earlier), and that bound."""
    members = _measured(session, run)
    if not members:
        return None, None

    def low(member: RunAgent) -> float:
        return wilson(member.resolved or 0, member.attempted or 0)[0]

    best = min(members, key=lambda m: (-low(m), -(m.score or 0.0), m.created_at, m.agent_id))
    return best.agent_id, low(best)


def _measured(session: Session, run: Run) -> list[RunAgent]:
    """The admitted agents of the run's current epoch with selection results."""
    return list(
        session.scalars(
            select(RunAgent).where(
                RunAgent.run_id == run.id,
                RunAgent.status == MemberStatus.ADMITTED,
                RunAgent.epoch == run.epoch,
                RunAgent.attempted.is_not(None),
                RunAgent.attempted > 0,
            )
        ).all()
    )


def _reached(session: Session, run: Run) -> dict[float, CheckpointReached]:
    """The checkpoints reached so far, by fraction, oldest first."""
    recorded = events.recorded(session, run_id=run.id, kind=REACHED)
    return {(p := CheckpointReached.model_validate(data)).fraction: p for data in recorded}
