"""Crossover steps: a child merging two parents' changes since their common ancestor.

With `crossover.rate` r each step the driver opens is a crossover with probability r, drawn
from a stream derived from the run's seed and the step number (a replay draws the same). Its
first parent is the one the run's strategy chose for the step; the second is drawn by the same
strategy among the other candidates that are neither ancestors nor descendants of the first (a
merge with one's own ancestor adds nothing). Without such a candidate the step stays a normal one.

The merge is made here, in the service that holds the archive, since a clean merge needs no
improver: in the tick that opened the step, the merge commit (both parents; the first is
`parent_id`) becomes the step's child, evaluated like any child. A merge that conflicts is
rejected with the conflicting paths (`on_conflict: reject`), or sent to a worker as an improve
job whose improver resolves the conflict markers (`on_conflict: improver`); the child it
submits is a merge commit of both parents too.
"""

from __future__ import annotations

import random
from collections import defaultdict

from sqlalchemy import select
from sqlalchemy.orm import Session

from contracts.errors import PatchError
from contracts.events import CrossoverOpened
from contracts.jobs import CrossoverPart
from contracts.vocabulary import StepKind
from service import events
from service.archive.git_store import MergeConflictError
from service.archive.limits import TooLargeError
from service.archive.store import Archive
from service.db.models import Run, RunAgent, Step
from service.driver.parents import candidates
from service.lifecycle import StepStatus
from service.plan import RunPlan
from service.results import reject_step
from service.selection.ledger import StepView
from service.selection.policy import ImproveParts, PolicyDefaults, RunScope

CROSSOVER = StepKind.CROSSOVER


class Crossover(PolicyDefaults):
    """Crossover as a run policy: steps opened in a tick may become crossovers, their merges
    are made before jobs are sent, and a conflicting one's improve job carries the conflicts.
    Without the archive no step is a crossover."""

    def __init__(self, session: Session, run: Run, plan: RunPlan, archive: Archive | None) -> None:
        self.session, self.run, self.plan = session, run, plan
        self.archive = archive

    def after_opening(self, scope: RunScope) -> None:
        if self.archive is not None:
            pair_steps(self.session, self.run, self.plan, first_number=scope.steps_opened + 1)

    def before_dispatch(self, scope: RunScope) -> list[str]:
        if self.archive is None:
            return []
        return merge_pending(self.session, self.run, self.plan, self.archive)

    def improve_parts(self, scope: RunScope, step: StepView) -> ImproveParts:
        return ImproveParts(crossover=job_part(self.archive, step))


def pair_steps(session: Session, run: Run, plan: RunPlan, *, first_number: int) -> None:
    """Make crossovers of some of the steps opened in this tick (numbered from `first_number`)."""
    rate = plan.config.crossover.rate
    if rate <= 0.0:
        return
    steps = session.scalars(
        select(Step)
        .where(Step.run_id == run.id, Step.number >= first_number, Step.kind == StepKind.IMPROVE)
        .where(Step.status == StepStatus.PENDING, Step.dispatches == 0)
        .order_by(Step.number)
    ).all()
    if not steps:
        return
    pool = candidates(session, run)
    parents, children = _edges(session, run)
    for step in steps:
        rng = crossover_stream(plan.rng_seed, step.number, rate)
        if rng is None:
            continue
        related = _reach(step.parent_id, parents) | _reach(step.parent_id, children)
        others = [c for c in pool if c.agent_id not in related]
        if not others:
            continue
        step.kind = CROSSOVER
        step.second_parent_id = plan.strategy.select(others, rng, k=1)[0]
        opened = CrossoverOpened(
            step=step.number, parent_id=step.parent_id, second_parent_id=step.second_parent_id
        )
        events.emit(session, opened, run_id=run.id)


def crossover_stream(rng_seed: int, step_number: int, rate: float) -> random.Random | None:
    """The step's crossover stream once it has drawn a crossover (it then draws the second
    parent), else None: a function of the run's seed and the step number alone."""
    rng = random.Random(f"{rng_seed}:{step_number}:crossover")
    return rng if rng.random() < rate else None


def merge_pending(session: Session, run: Run, plan: RunPlan, archive: Archive) -> list[str]:
    """Merge the crossover steps not yet merged nor sent: a clean merge becomes the step's child;
    a conflict rejects the step or is left for the improver. Returns the children made, whose
    refs the caller writes once the transaction commits (git objects, rows, then the ref)."""
    steps = session.scalars(
        select(Step)
        .where(Step.run_id == run.id, Step.kind == CROSSOVER, Step.status == StepStatus.PENDING)
        .where(Step.child_id.is_(None), Step.dispatched_at.is_(None))
        .order_by(Step.number)
    ).all()
    made: list[str] = []
    for step in steps:
        try:
            made.append(archive.merge_child(session, step).id)
        except MergeConflictError as exc:
            if plan.config.crossover.on_conflict == "reject":
                reject_step(session, step_id=step.id, reason=str(exc))
            # else: sent to a worker as an improve job, the conflicts in the job
        except (PatchError, TooLargeError) as exc:  # a merge that adds nothing, or over the limits
            reject_step(session, step_id=step.id, reason=f"crossover refused: {exc}")
    session.flush()
    return made


def job_part(archive: Archive | None, step: StepView) -> CrossoverPart | None:
    """What an improve job of a conflicting crossover step tells the worker; None for others."""
    if step.kind != CROSSOVER or step.second_parent_id is None:
        return None
    if archive is None:
        raise RuntimeError("a crossover step needs the archive to be dispatched")
    conflicts = archive.git.merge_conflicts(step.parent_id, step.second_parent_id)
    return CrossoverPart(second_parent_id=step.second_parent_id, conflicts=conflicts)


def _edges(session: Session, run: Run) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Each member's parents and children in the run's lineage (a merge child has two parents)."""
    parents: dict[str, list[str]] = defaultdict(list)
    children: dict[str, list[str]] = defaultdict(list)
    rows = session.execute(
        select(RunAgent.agent_id, RunAgent.parent_id, RunAgent.second_parent_id).where(
            RunAgent.run_id == run.id
        )
    )
    for agent_id, *ups in rows:
        for up in ups:
            if up is not None:
                parents[agent_id].append(up)
                children[up].append(agent_id)
    return parents, children


def _reach(start: str, links: dict[str, list[str]]) -> set[str]:
    """`start` and every agent reached from it along `links`."""
    seen = {start}
    stack = [start]
    while stack:
        for nxt in links.get(stack.pop(), []):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen
