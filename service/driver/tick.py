"""One tick of a run: one transaction per running run per tick, jobs sent after it commits.

A tick takes each running run one move further along the path of its steps:

    advance   evaluating agents go through their stages (the missing evaluations are created)
    admit     agents whose evaluation is over are admitted or rejected, and their steps with them
    (hooks)   the run's policies keep their books (islands, niches, epochs, experience)
    select    per free slot, the policy's move: a parent drawn among the current epoch's
              admitted agents, or an agent measured on more tasks
    open      a step is opened for each parent
    dispatch  jobs not yet sent, or lost (unanswered past their time limit), go to the outbox

Admission comes before selection so that an agent admitted in this tick is a candidate, and
its step's slot free, at once; dispatch comes last so that every job decided in the tick is
sent in it. A spent budget, or a model upstream that failed every call of the last few
evaluations (`service.driver.upstream_watch`), stops the run before any of this; a run whose children are all
attempted completes once nothing is in flight and its policies agree (with a held-out set,
once its top agents are scored on it: `service.driver.heldout`). Every job sent carries a
lease on the run's money and tokens (`service.leases`); a run whose jobs find no room left in
its budget, with no lease out, completes.

The tick names no search feature: what a strategy or a run feature (epochs, the held-out
phase, crossover) does around these moves goes through the run's policy chain
(`service.driver.policies`, hooks in `service.selection.policy`). A policy may spend a free
slot on measuring an agent already in the run instead of opening a step (`Measure`).
"""

from __future__ import annotations

import logging

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from service import leases, lifecycle
from service.archive.store import Archive
from service.db.models import Run, RunAgent, Step
from service.driver import budget
from service.driver.jobs import REDISPATCH_MARGIN_S, Outbox, dispatch_jobs
from service.driver.measure import measure, rescore_measured
from service.driver.parents import choose_parent
from service.driver.policies import run_policy, run_scope
from service.driver.stages import Verdict, admit, advance
from service.driver.upstream_watch import upstream_stop
from service.lifecycle import MemberStatus
from service.plan import RunPlan, stored_plan
from service.runs import complete
from service.selection.policy import Expand, Measure, RunScope, SearchPolicy, Wait
from service.steps import improve_kind, open_step

log = logging.getLogger("clade.driver")


def drive(
    session: Session,
    run: Run,
    outbox: Outbox,
    *,
    redispatch_margin_s: float = REDISPATCH_MARGIN_S,
    archive: Archive | None = None,
) -> None:
    """One tick of a run, decided from what the database holds now."""
    plan = stored_plan(run)
    used = budget.spent(session, run)
    stop = budget.hard_stop(plan.budget, used) or upstream_stop(session, run, plan)
    if stop is not None:
        log.info("run %s stops: %s", run.id, stop)
        complete(session, run=run, reason=stop)
        return
    policy = run_policy(session, run, plan, archive)
    scope = run_scope(session, run, plan, steps_opened=used.steps)
    admit_agents(session, run, advance_agents(session, run, plan, policy, scope))
    rescore_measured(session, run)
    policy.after_admission(scope)
    reserved = policy.reserved_evaluations(scope)
    reserved_usd = budget.reserve_usd(session, run, plan, reserved)
    if not budget.children_exhausted(
        plan.budget, used, reserved_evaluations=reserved, reserved_usd=reserved_usd
    ):
        parents = select_parents(session, run, plan, used, policy, scope, reserved=reserved)
        open_steps(session, run, parents, improver_mode=plan.improver.mode)
        policy.after_opening(scope)
    elif (
        _steps_in_flight(session, run) == 0
        and not _agents_evaluating(session, run)
        and policy.may_complete(scope)  # e.g. the top agents scored on held-out tasks first
    ):
        complete(session, run=run, reason=_completion_reason(session, run, plan, used, reserved))
        return
    outbox.refs += policy.before_dispatch(scope)
    starved = dispatch_jobs(
        session, run, plan, used, outbox, policy=policy, scope=scope, redispatch_margin_s=redispatch_margin_s
    )
    if starved is not None and leases.outstanding(session, run_id=run.id).leases == 0:
        # Jobs wait for room that only a lease coming back could make, and none is out.
        reason = budget.starved_reason(plan.budget, used, starved)
        log.info("run %s stops: %s", run.id, reason)
        complete(session, run=run, reason=reason)


def advance_agents(
    session: Session, run: Run, plan: RunPlan, policy: SearchPolicy, scope: RunScope
) -> list[Verdict]:
    """Each evaluating agent as far through its stages (the run's, or those the policy gives a new
    agent: `entry_stages`) as its results allow; the finished ones."""
    members = session.scalars(
        select(RunAgent).where(RunAgent.run_id == run.id, RunAgent.status == MemberStatus.EVALUATING)
    ).all()
    verdicts = []
    for member in members:
        stages = policy.entry_stages(scope, member.agent_id)
        if (verdict := advance(session, run, plan, member, stages=stages)) is not None:
            verdicts.append(verdict)
    return verdicts


def admit_agents(session: Session, run: Run, verdicts: list[Verdict]) -> None:
    for verdict in verdicts:
        admit(session, run, verdict)


def select_parents(
    session: Session,
    run: Run,
    plan: RunPlan,
    used: budget.Spent,
    policy: SearchPolicy,
    scope: RunScope,
    *,
    reserved: int = 0,
) -> list[str]:
    """A parent for each free step slot, within the children budget (none until one is admitted);
    a slot the policy spends on measuring an agent opens no step, and no slot is used once the
    measurements of this tick have reached the evaluation budget."""
    limits = [
        plan.parallelism - _steps_in_flight(session, run),
        plan.budget.max_children - used.steps,
    ]
    allowed = policy.steps_allowed(scope)  # e.g. the steps left before an epoch's boundary
    free = min(limits if allowed is None else [*limits, allowed])
    parents: list[str] = []
    evaluations = used.evaluations + reserved
    for _ in range(max(free, 0)):
        number = used.steps + 1 + len(parents)
        if plan.budget.max_evaluations is not None and evaluations >= plan.budget.max_evaluations:
            break  # measurements sent in this tick spent the rest (a step's stages are its own)
        match policy.next_move(scope, number, parents):
            case Wait():
                break  # e.g. a group run's round is not over
            case Measure() as move:
                evaluations += measure(session, run, plan, move)
            case Expand():
                parent = choose_parent(session, run, plan, number, parents)
                if parent is None:
                    break  # the seed is still being scored
                parents.append(parent)
    return parents


def open_steps(session: Session, run: Run, parents: list[str], *, improver_mode: str = "self") -> None:
    for parent in parents:
        kind = improve_kind(session, mode=improver_mode, parent_id=parent)
        open_step(session, run_id=run.id, parent_id=parent, kind=kind)
    session.flush()


def _completion_reason(session: Session, run: Run, plan: RunPlan, used: budget.Spent, reserved: int) -> str:
    limit = plan.budget.max_evaluations
    stopped_early = used.steps < plan.budget.max_children and plan.budget.max_children > 0
    if limit is not None and stopped_early:
        held = f", {reserved} kept for the held-out phase" if reserved else ""
        return f"budget: max_evaluations reached ({used.evaluations} of {limit}{held})"
    if plan.budget.max_usd is not None and stopped_early:
        # Only a reserve for held-out scoring stops the steps of a dollar budget before it is spent.
        return (
            f"budget: max_usd reached (${used.usd:.4f} of ${plan.budget.max_usd:.4f},"
            " the rest kept for held-out scoring)"
        )
    if plan.budget.max_children == 0:
        return "evaluation finished (an evaluation-only run)"
    # max_children counts steps attempted, a step that made no child included: say so, with
    # how many made one, or "max_children reached (1)" reads as one child where there is none.
    made, admitted = _children(session, run)
    return (
        f"budget: max_children reached ({used.steps} of {plan.budget.max_children} steps attempted:"
        f" {made} made a child ({admitted} admitted), {used.steps - made} made none)"
    )


def _children(session: Session, run: Run) -> tuple[int, int]:
    """(steps that made a child, steps whose child was admitted)."""
    made, admitted = session.execute(
        select(
            func.count(Step.child_id),
            func.count().filter(Step.status == lifecycle.StepStatus.ADMITTED),
        ).where(Step.run_id == run.id)
    ).one()
    return int(made or 0), int(admitted or 0)


def _steps_in_flight(session: Session, run: Run) -> int:
    return (
        session.scalar(
            select(func.count())
            .select_from(Step)
            .where(Step.run_id == run.id, Step.status.in_(lifecycle.STEP_IN_FLIGHT))
        )
        or 0
    )


def _agents_evaluating(session: Session, run: Run) -> bool:
    return bool(
        session.scalar(
            select(func.count())
            .select_from(RunAgent)
            .where(RunAgent.run_id == run.id, RunAgent.status == MemberStatus.EVALUATING)
        )
    )
