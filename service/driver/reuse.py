"""Reuse of evaluations: the same code on the same task under the same settings is one measurement.

Every evaluation carries a `reuse_key`, the sha256 of what decides its outcome: the agent's git
tree (not its commit: a child whose code equals another agent's has a new commit, the same tree),
the task, the benchmark (name, options and Clade's version, which ships the graders and
clade-mini), the solve model, the limits the agent runs and is graded under, and the trial.

When an evaluation is due and a finished one with its key exists (in this run, or in any run
when the run's `evaluation.reuse` is `archive`), its result is copied: the new row is done at
once, `reused_from` names the original measurement, no job is sent and nothing is spent. Only
results that can be trusted are copied: not tampered, not an infrastructure failure. While an
evaluation with the key is still pending in this run, the new one waits for it rather than run
the same thing twice.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from functools import cache

from sqlalchemy import select
from sqlalchemy.orm import Session

from contracts.config import JudgeConfig, RunConfig
from contracts.vocabulary import EvaluationPurpose
from service import lifecycle
from service.db.models import Agent, Evaluation, Run, RunAgent
from service.lifecycle import EvaluationStatus
from service.plan import RunPlan
from service.results import evaluation_done
from service.runs import new_id

Slot = tuple[str, int]  # (task id, trial)
# Evaluation.purpose: scored in the stages (selection), or after them on held-out tasks.
SELECTION = EvaluationPurpose.SELECTION
HELDOUT = EvaluationPurpose.HELDOUT


@cache
def _clade_version() -> str:
    try:
        return importlib.metadata.version("clade")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown"


def solve_settings(config: RunConfig, judge: JudgeConfig | None = None) -> str:
    """The digest of everything in a run's configuration that can change an evaluation's outcome,
    the epoch's judge included (a judged result is not a test-graded one)."""
    limits = config.limits
    settings = {
        "benchmark": config.benchmark.model_dump(mode="json"),
        "clade": _clade_version(),
        "solve_model": config.models.solve,
        "limits": {
            "solve_timeout_s": limits.solve_timeout_s,
            "test_timeout_s": limits.test_timeout_s,
            "memory_mb": limits.memory_mb,
            "cpus": limits.cpus,
            "pids": limits.pids,
            "max_agent_steps": limits.max_agent_steps,
        },
        "per_evaluation_usd": config.budget.per_evaluation_usd,
        "per_evaluation_tokens": config.budget.per_evaluation_tokens,
        "judge": None if judge is None else judge.model_dump(mode="json"),
    }
    return _sha256(settings)


def reuse_key(*, tree_id: str, task_id: str, settings: str, trial: int) -> str:
    """The key of one evaluation: equal keys are the same measurement."""
    return _sha256({"v": 1, "tree": tree_id, "task": task_id, "settings": settings, "trial": trial})


def _sha256(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def trustworthy(evaluation: Evaluation) -> bool:
    """A finished result that may stand for another agent's: neither forged nor lost to infrastructure."""
    result = evaluation.result or {}
    return (
        evaluation.status == EvaluationStatus.DONE
        and evaluation.resolved is not None
        and not result.get("tampered")
        and not result.get("infrastructure_failure")
    )


def create_evaluations(
    session: Session,
    run: Run,
    plan: RunPlan,
    member: RunAgent,
    slots: Iterable[Slot],
    *,
    stage: int,
    purpose: str,
) -> dict[Slot, Evaluation]:
    """The evaluations of `member` for `slots`: copied where a trusted result with the same key
    exists, pending (for the driver to send) otherwise; a slot whose key is pending for another
    agent of this run is left out, to be created once that result is in."""
    scope = plan.config.evaluation.reuse
    settings = solve_settings(plan.config, plan.epoch(run.epoch).judge)
    tree = session.scalar(select(Agent.tree_id).where(Agent.id == member.agent_id))
    assert tree is not None
    if scope != "none" and member.same_as is None:
        member.same_as = _same_tree(session, member, tree, archive=scope == "archive")
    created: dict[Slot, Evaluation] = {}
    keyed = [
        (slot, reuse_key(tree_id=tree, task_id=slot[0], settings=settings, trial=slot[1])) for slot in slots
    ]
    keys = [key for _, key in keyed]
    # Two queries for all the slots, not two per slot (each of which flushed the rows added so far):
    # the slots' keys are distinct, so no row this loop adds is another slot's source or twin.
    sources = _sources(session, run, keys, archive=scope == "archive") if scope != "none" else {}
    twins = _twins_pending(session, run, keys, member.agent_id) if scope != "none" else set()
    for (task, trial), key in keyed:
        source = sources.get(key)
        if source is None and key in twins:
            continue
        evaluation = Evaluation(
            id=new_id(),
            run_id=run.id,
            agent_id=member.agent_id,
            task_id=task,
            stage=stage,
            trial=trial,
            epoch=run.epoch,
            purpose=purpose,
            reuse_key=key,
        )
        if source is None:
            lifecycle.queue_evaluation(evaluation)
        else:
            _copy(session, source, evaluation)
        session.add(evaluation)
        created[(task, trial)] = evaluation
    session.flush()
    return created


def _copy(session: Session, source: Evaluation, evaluation: Evaluation) -> None:
    lifecycle.copy_evaluation(evaluation)
    evaluation.resolved = source.resolved
    evaluation.result = source.result
    evaluation.reused_from = source.reused_from or source.id  # the measurement itself, not a copy of it
    evaluation.finished_at = datetime.now(UTC)
    # Tokens and cost stay 0: nothing was spent on this row (the original holds the usage).
    session.add(evaluation_done(evaluation, reused_from=evaluation.reused_from))


def _sources(session: Session, run: Run, keys: Sequence[str], *, archive: bool) -> dict[str, Evaluation]:
    """`_source` for each of `keys` that has one, in one query."""
    where = [Evaluation.reuse_key.in_(keys), Evaluation.status == EvaluationStatus.DONE]
    if not archive:
        where.append(Evaluation.run_id == run.id)
    by_key: dict[str, list[Evaluation]] = {}
    for e in session.scalars(select(Evaluation).where(*where).order_by(Evaluation.created_at)):
        if trustworthy(e) and e.reuse_key is not None:
            by_key.setdefault(e.reuse_key, []).append(e)
    return {
        key: next((e for e in trusted if e.run_id == run.id), trusted[0]) for key, trusted in by_key.items()
    }


def _twins_pending(session: Session, run: Run, keys: Sequence[str], agent_id: str) -> set[str]:
    """Those of `keys` pending for another agent of this run, in one query."""
    return {
        key
        for key in session.scalars(
            select(Evaluation.reuse_key).where(
                Evaluation.run_id == run.id,
                Evaluation.reuse_key.in_(keys),
                Evaluation.status == EvaluationStatus.PENDING,
                Evaluation.agent_id != agent_id,
            )
        )
        if key is not None
    }


def _same_tree(session: Session, member: RunAgent, tree: str, *, archive: bool) -> str | None:
    """An agent with the same code as `member`'s: one that joined this run before it, else (if
    allowed) any in the archive."""
    agent_id = member.agent_id
    in_run = session.scalar(
        select(RunAgent.agent_id)
        .join(Agent, Agent.id == RunAgent.agent_id)
        .where(
            RunAgent.run_id == member.run_id,
            RunAgent.created_at <= member.created_at,
            Agent.tree_id == tree,
            Agent.id != agent_id,
        )
        .order_by(RunAgent.created_at, RunAgent.agent_id)
        .limit(1)
    )
    if in_run is not None or not archive:
        return in_run
    return session.scalar(
        select(Agent.id)
        .where(Agent.tree_id == tree, Agent.id != agent_id)
        .order_by(Agent.created_at, Agent.id)
        .limit(1)
    )
