"""Choosing parents: the run's admitted agents scored in its current epoch as selection candidates."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.db.models import Run, RunAgent
from service.driver.ledger import DatabaseLedger
from service.driver.tallies import selection_tallies
from service.lifecycle import MemberStatus
from service.plan import RunPlan
from service.selection import Candidate
from service.selection.policy import RunScope


def candidates(session: Session, run: Run) -> list[Candidate]:
    """The run's admitted agents of its current epoch, with their clade totals (of selection
    evaluations: held-out results never reach a parent draw)."""
    members = session.scalars(select(RunAgent).where(RunAgent.run_id == run.id)).all()
    totals = clade_totals([(m.agent_id, m.parent_id) for m in members], selection_tallies(session, run))
    result = []
    for member in members:
        # Only scores of the run's current epoch (utility version) count; see epochs.py.
        if member.status != MemberStatus.ADMITTED or member.epoch != run.epoch or member.score is None:
            continue
        resolved, attempted = totals[member.agent_id]
        result.append(
            Candidate(
                agent_id=member.agent_id,
                score=member.score or 0.0,
                children=member.children,
                clade_resolved=resolved,
                clade_attempted=attempted,
                island=member.island,
                niche=member.niche,
            )
        )
    return result


def choose_parent(
    session: Session, run: Run, plan: RunPlan, step_number: int, chosen: Sequence[str] = ()
) -> str | None:
    """The parent of step `step_number`, or None while no agent is admitted yet; `chosen` are
    the parents picked earlier in this tick for the steps just before it (not opened yet).

    The random stream depends only on the run's seed and the step number, so a replayed run
    with the same archive picks the same parents. The strategy first does the bookkeeping its
    draw needs (`prepare_draw`: an islands run records the migrations due at this step)."""
    strategy = plan.strategy
    pool = candidates(session, run)
    if not pool:
        return None
    scope = RunScope(
        ledger=DatabaseLedger(session, run), plan=plan, steps_opened=step_number - 1 - len(chosen)
    )
    pool = list(strategy.prepare_draw(scope, pool, step_number))
    step = strategy.step_context(scope, step_number, chosen)
    rng = random.Random(f"{plan.rng_seed}:{step_number}")
    return strategy.select_for_step(pool, rng, step)


def clade_totals(
    edges: list[tuple[str, str | None]], stats: dict[str, tuple[int, int]]
) -> dict[str, tuple[int, int]]:
    """(resolved, attempted) pooled over each agent and all its descendants (HGM's clade)."""
    children: dict[str | None, list[str]] = defaultdict(list)
    for agent_id, parent_id in edges:
        children[parent_id].append(agent_id)
    totals: dict[str, tuple[int, int]] = {}
    # Iterative post-order: lineages can be thousands of generations deep.
    stack: list[tuple[str, bool]] = [(agent_id, False) for agent_id, _ in edges]
    while stack:
        agent_id, expanded = stack.pop()
        if agent_id in totals:
            continue
        kids = children.get(agent_id, [])
        if not expanded and any(kid not in totals for kid in kids):
            stack.append((agent_id, True))
            stack.extend((kid, False) for kid in kids if kid not in totals)
            continue
        resolved, attempted = stats.get(agent_id, (0, 0))
        for kid in kids:
            resolved += totals[kid][0]
            attempted += totals[kid][1]
        totals[agent_id] = (resolved, attempted)
    return totals
