"""What the driver records for the islands, map_elites and group strategies.

Strategies are stateless functions of the candidates and the step number; what they need
beyond scores is written here from what the database holds, so a replay draws the same:

- islands: an agent made in step n lives on island `n mod islands` (the island its parent
  was drawn on); the seed has no island, which means every island. The migrations due before
  a step's draw are recorded as `island_migration` events (agent, from, to, step) and read
  back as the candidates' `migrated_to`.
- map_elites: an admitted agent's niche, from its first-stage results (`MapElites.descriptor`).
- group: each step's group id (the group number as text); a group's steps open only once
  every earlier group's steps have finished; the experience pool's versions
  (`service.experience`), whose latest text every improve job of the run carries.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from service import experience
from service.db.models import Evaluation, Event, Run, RunAgent, Step
from service.lifecycle import STEP_IN_FLIGHT, EvaluationStatus, MemberStatus
from service.plan import RunPlan
from service.selection import Candidate, GroupEvolution, Islands, MapElites

MIGRATION = "island_migration"


def after_admission(session: Session, run: Run, plan: RunPlan) -> None:
    """Islands and niches of the agents that lack them; a new experience version if one is due."""
    strategy = plan.strategy
    if isinstance(strategy, Islands):
        for member in session.scalars(
            select(RunAgent).where(
                RunAgent.run_id == run.id,
                RunAgent.island.is_(None),
                RunAgent.step_number.is_not(None),
                RunAgent.agent_id != run.seed_agent_id,  # the seed (step 0) is on every island
            )
        ).all():
            member.island = strategy.island_of_step(member.step_number or 0)
    if isinstance(strategy, MapElites):
        _describe_niches(session, run, plan, strategy)
    if isinstance(strategy, GroupEvolution):
        experience.update(session, run_id=run.id, limit_chars=strategy.experience_chars)


def after_opening(session: Session, run: Run, plan: RunPlan) -> None:
    """The group id of each step just opened (its children inherit it, `Archive.create_child`)."""
    strategy = plan.strategy
    if not isinstance(strategy, GroupEvolution):
        return
    for step in session.scalars(select(Step).where(Step.run_id == run.id, Step.group_id.is_(None))).all():
        step.group_id = str(strategy.group_of_step(step.number))
    session.flush()


def migrated_to(session: Session, run: Run) -> dict[str, tuple[int, ...]]:
    """The islands each agent migrated to, from the run's migration events."""
    seen: dict[str, set[int]] = defaultdict(set)
    for payload in session.scalars(
        select(Event.payload).where(Event.run_id == run.id, Event.kind == MIGRATION)
    ):
        seen[str(payload["agent_id"])].add(int(payload["to"]))
    return {agent_id: tuple(sorted(islands)) for agent_id, islands in seen.items()}


def migrate(session: Session, run: Run, strategy: Islands, pool: Sequence[Candidate], number: int) -> bool:
    """Record the migrations due before step `number`'s draw; whether there were any."""
    moves = strategy.migrations(pool, number)
    for move in moves:
        session.add(
            Event(
                run_id=run.id,
                kind=MIGRATION,
                payload={"agent_id": move.agent_id, "from": move.source, "to": move.target, "step": number},
            )
        )
    session.flush()
    return bool(moves)


def waits_for_round(session: Session, run: Run, plan: RunPlan, number: int, chosen: Sequence[str]) -> bool:
    """Whether step `number` opens a new group while steps of earlier groups are in flight: a
    group starts once every earlier one has finished, so its jobs carry what they learned."""
    strategy = plan.strategy
    if not isinstance(strategy, GroupEvolution) or number == 1:
        return False
    if strategy.steps_of_group(strategy.group_of_step(number)).start != number:
        return False
    if chosen:
        return True  # steps picked earlier in this tick belong to the group before
    in_flight = session.scalar(
        select(func.count())
        .select_from(Step)
        .where(Step.run_id == run.id, Step.number < number, Step.status.in_(STEP_IN_FLIGHT))
    )
    return bool(in_flight)


def siblings(
    session: Session, run: Run, plan: RunPlan, number: int, chosen: Sequence[str]
) -> tuple[str, ...]:
    """The parents already chosen for the other steps of step `number`'s group: the steps
    opened before and `chosen`, the parents picked earlier in this tick for the steps just
    before `number` (not opened yet)."""
    strategy = plan.strategy
    if not isinstance(strategy, GroupEvolution):
        return ()
    members = strategy.steps_of_group(strategy.group_of_step(number))
    parents: dict[int, str] = {
        step_number: parent
        for step_number, parent in session.execute(
            select(Step.number, Step.parent_id).where(
                Step.run_id == run.id, Step.number >= members.start, Step.number < number
            )
        )
    }
    first_chosen = number - len(chosen)
    parents.update({first_chosen + index: parent for index, parent in enumerate(chosen)})
    return tuple(parents[n] for n in sorted(parents) if n in members and n < number)


def experience_text(session: Session, run: Run, plan: RunPlan) -> str | None:
    """The latest experience pool's text for an improve job; None outside group runs or
    before any step of the run has finished."""
    if not isinstance(plan.strategy, GroupEvolution):
        return None
    latest = experience.latest_version(session, run_id=run.id)
    return None if latest is None else latest.text


def _describe_niches(session: Session, run: Run, plan: RunPlan, strategy: MapElites) -> None:
    members = session.scalars(
        select(RunAgent).where(
            RunAgent.run_id == run.id, RunAgent.status == MemberStatus.ADMITTED, RunAgent.niche.is_(None)
        )
    ).all()
    if not members:
        return
    tasks = plan.stages[0].task_ids
    results: dict[str, dict[str, tuple[int, int]]] = defaultdict(dict)
    for agent_id, task_id, resolved, attempted in session.execute(
        select(
            Evaluation.agent_id,
            Evaluation.task_id,
            func.sum(case((Evaluation.resolved.is_(True), 1), else_=0)),
            func.count(),
        )
        .where(
            Evaluation.run_id == run.id,
            Evaluation.agent_id.in_([m.agent_id for m in members]),
            Evaluation.task_id.in_(tasks),
            Evaluation.status == EvaluationStatus.DONE,
            Evaluation.purpose == "selection",
            Evaluation.epoch == run.epoch,
        )
        .group_by(Evaluation.agent_id, Evaluation.task_id)
    ):
        results[agent_id][task_id] = (int(resolved), int(attempted))
    for member in members:
        member.niche = strategy.descriptor(tasks, results[member.agent_id])
