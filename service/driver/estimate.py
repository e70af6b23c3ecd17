"""What a run would cost and take, before it starts (`clade run start --dry-run`).

Two figures. The upper bound follows from the plan alone: every agent (the seed and each
child) evaluated on every task of every stage, every job running to its hard time limit, the
jobs spread over `parallelism` slots, clipped by the budget's own limits. The expected
figure comes from the archive: finished evaluations of earlier runs on the same benchmark
(name and options) with the same solving model, and their steps with the same improving
model, give a mean cost, token count and duration per evaluation and per step, and the
share of stage tasks an agent really reached.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from contracts.config import ConfigFieldError, RacingConfig
from service.db.models import Evaluation, LLMUsage, Run, Step
from service.driver.checkpoints import kept_back_at_start
from service.driver.epochs import most_evaluations
from service.driver.heldout import phase_cost as heldout_phase_cost
from service.lifecycle import EvaluationStatus
from service.plan import RunPlan
from service.selection.policy import PolicyDefaults

IMPROVE_PURPOSES = ("improve", "diagnose")


class Figure(BaseModel):
    usd: float | None = Field(description="null: nothing bounds it (no max_usd)")
    tokens: int | None = Field(description="null: nothing bounds it (no max_tokens)")
    wall_time_s: float


class Expected(Figure):
    evaluations: int = Field(description="evaluations expected, from how far earlier agents got")
    basis: str = Field(description="what the figure was drawn from")


class RunEstimate(BaseModel):
    evaluations_max: int = Field(
        description="every agent on every task of every stage (each trial), and the top agents and"
        " checkpoints on the held-out tasks; with max_evaluations, at most that budget plus what the"
        " steps in flight when it is reached still send (or the seed's stages and what is kept back,"
        " if more)"
    )
    improve_jobs_max: int
    upper_bound: Figure
    expected: Expected | None = Field(description="null: the archive has no earlier evaluations to go by")
    no_history: str | None = Field(default=None, description="why there is no expected figure")


class StagePublic(BaseModel):
    index: int
    tasks: int
    threshold: float
    task_ids: list[str]


class PlannedRun(BaseModel):
    """A configuration as the service would run it: nothing is stored."""

    name: str
    seed_agent: str
    benchmark: dict[str, Any]
    stages: list[StagePublic]
    selection: dict[str, Any]
    improver: dict[str, Any]
    models: dict[str, Any]  # each purpose's model, and `prices`: what each one costs (the snapshot)
    budget: dict[str, Any]
    limits: dict[str, Any]
    parallelism: int
    rng_seed: int
    time_limits: dict[str, int] = Field(description="Celery's hard time limit of each job kind, in seconds")
    estimate: RunEstimate
    quarantine: dict[str, Any] | None = Field(
        default=None,
        description="the run's quarantined tasks (`tasks`, its file's included), kept out of every stage"
        " and held-out set unless `include`",
    )


def planned_run(session: Session, plan: RunPlan) -> PlannedRun:
    config = plan.config
    return PlannedRun(
        name=config.name,
        seed_agent=config.seed_agent,
        benchmark=config.benchmark.model_dump(mode="json"),
        stages=[
            StagePublic(
                index=i, tasks=len(stage.task_ids), threshold=stage.threshold, task_ids=list(stage.task_ids)
            )
            for i, stage in enumerate(plan.stages)
        ],
        selection=config.selection.model_dump(mode="json"),
        improver=config.improver.model_dump(mode="json"),
        models=config.models.model_dump(mode="json"),
        budget=config.budget.model_dump(mode="json"),
        limits=config.limits.model_dump(mode="json"),
        parallelism=config.parallelism,
        rng_seed=config.rng_seed,
        time_limits={"improve_s": plan.time_limits.improve_s, "evaluate_s": plan.time_limits.evaluate_s},
        estimate=estimate(session, plan),
        quarantine=config.quarantine.model_dump(mode="json") if config.quarantine is not None else None,
    )


class History(BaseModel):
    runs: int
    evaluations: int
    agents: int
    reach: float  # the share of their runs' stage tasks earlier agents were evaluated on
    usd_per_evaluation: float
    tokens_per_evaluation: float
    seconds_per_evaluation: float
    steps: int
    usd_per_step: float
    tokens_per_step: float
    seconds_per_step: float


def estimate(session: Session, plan: RunPlan) -> RunEstimate:
    budget, config = plan.budget, plan.config
    solve = config.models.primary("solve")
    agents = budget.max_children + 1
    heldout = plan.heldout
    scored_heldout = heldout_phase_cost(heldout, trials=plan.trials, agents=agents) if heldout else 0
    per_scoring = len(heldout.tasks or []) * plan.trials if heldout else 0
    checkpoints = len(config.evaluation.checkpoints) * per_scoring
    # Every epoch's stages and re-scorings, each task `trials` times, then the held-out phase.
    evaluations_max = most_evaluations(plan) * plan.trials + scored_heldout + checkpoints
    bound = evaluation_budget_bound(plan)
    if bound is not None:
        evaluations_max = min(evaluations_max, bound)
    job_seconds = (
        evaluations_max * plan.time_limits.evaluate_s + budget.max_children * plan.time_limits.improve_s
    )
    wall = job_seconds / plan.parallelism
    if budget.max_wall_time_s is not None:
        wall = min(wall, budget.max_wall_time_s)
    usd = budget.max_usd
    if budget.per_evaluation_usd is not None and budget.max_children == 0:
        usd = min(usd or float("inf"), evaluations_max * budget.per_evaluation_usd)
    tokens = budget.max_tokens
    if budget.per_evaluation_tokens is not None and budget.max_children == 0:
        tokens = min(tokens or 2**63, evaluations_max * budget.per_evaluation_tokens)
    upper = Figure(usd=usd, tokens=tokens, wall_time_s=wall)
    history = _history(
        session, config.benchmark.model_dump(mode="json"), config.models.solve, config.models.improve
    )
    if history is None:
        reason = (
            f"no finished evaluation of {config.benchmark.name} with the same options and solving model"
            f" {solve} in the archive"
        )
        return RunEstimate(
            evaluations_max=evaluations_max,
            improve_jobs_max=budget.max_children,
            upper_bound=upper,
            expected=None,
            no_history=reason,
        )
    evaluations = round(evaluations_max * history.reach)
    steps = budget.max_children
    expected_usd = evaluations * history.usd_per_evaluation + steps * history.usd_per_step
    expected_tokens = evaluations * history.tokens_per_evaluation + steps * history.tokens_per_step
    seconds = evaluations * history.seconds_per_evaluation + steps * history.seconds_per_step
    expected = Expected(
        usd=min(expected_usd, upper.usd) if upper.usd is not None else expected_usd,
        tokens=round(min(expected_tokens, upper.tokens) if upper.tokens is not None else expected_tokens),
        wall_time_s=min(seconds / plan.parallelism, wall),
        evaluations=evaluations,
        basis=(
            f"{history.evaluations} evaluations of {history.agents} agents and {history.steps} steps"
            f" in {history.runs} earlier runs on {config.benchmark.name} with {solve}"
        ),
    )
    return RunEstimate(
        evaluations_max=evaluations_max,
        improve_jobs_max=budget.max_children,
        upper_bound=upper,
        expected=expected,
    )


def evaluation_budget_bound(plan: RunPlan) -> int | None:
    """The most evaluations a run with `budget.max_evaluations` sends (None without one).

    No step opens once the evaluations sent plus those kept back reach the budget (a slot's
    measurement is one task); the steps then in flight, at most `parallelism`, still walk their
    children through the stages, and what was kept back is sent. The seed walks its stages
    whatever the budget, and what is kept back is sent after it even when no step opened."""
    limit = plan.budget.max_evaluations
    if limit is None:
        return None
    trials = plan.trials
    seed_walk = sum(len(stage.task_ids) for stage in plan.stages) * trials
    child_walk = max(sum(len(stage.task_ids) for stage in epoch.stages) for epoch in plan.epochs) * trials
    # A later epoch re-scores agents at its boundary, which the steps in flight may still cross.
    rescored = sum(
        (epoch.rescore_top_k + 1) * sum(len(stage.task_ids) for stage in epoch.stages) * trials
        for epoch in plan.epochs[1:]
    )
    return max(seed_walk + kept_back_at_start(plan), limit + plan.parallelism * child_walk) + rescored


def first_stage_evaluations(plan: RunPlan) -> int:
    """The fewest evaluations an agent's first stage takes before its evaluation policy decides:
    every task (`stages`), the first batch (`racing`), or for another policy one, not knowing."""
    tasks, trials = len(plan.stages[0].task_ids), plan.trials
    evaluation = plan.config.evaluation
    if evaluation.policy == "stages":
        return tasks * trials
    if evaluation.policy == "racing":
        return min((evaluation.racing or RacingConfig()).batch, tasks) * trials
    return 1


def check_evaluation_room(plan: RunPlan) -> None:
    """Refuse a `budget.max_evaluations` that leaves no room for one child once the held-out phase's
    and the checkpoints' evaluations are kept back and the seed's first stage is sent: such a run
    would score the seed and stop. ConfigFieldError at `budget.max_evaluations`."""
    budget = plan.budget
    if budget.max_evaluations is None or budget.max_children == 0:
        return
    kept_back = kept_back_at_start(plan)
    first = first_stage_evaluations(plan)
    # Results of identical code may be copied from the archive: the seed's may then cost nothing.
    seed = 0 if plan.config.evaluation.reuse == "archive" else first
    # A strategy that gives agents their entry stages itself (hgm-paper admits children unmeasured)
    # may measure a child one task at a time.
    walks_stages = getattr(type(plan.strategy), "entry_stages", None) is PolicyDefaults.entry_stages
    child = first if walks_stages else 1
    needed = kept_back + seed + child
    if needed > budget.max_evaluations:
        raise ConfigFieldError(
            "budget.max_evaluations",
            f"{budget.max_evaluations} evaluations leave no room for a child: {kept_back} are kept back"
            f" for the held-out phase and checkpoints, the seed's first stage takes {seed} and a"
            f" child's {child} ({needed} in all); give at least {needed}, or keep fewer back"
            " (evaluation.heldout, evaluation.checkpoints)",
        )


def _history(session: Session, benchmark: dict[str, Any], solve: object, improve: object) -> History | None:
    """Means over earlier runs of the same benchmark and models (configs compared in Python: JSON
    columns compare differently on each database)."""
    matching = []
    offered: dict[str, int] = {}
    for run_id, config, stage_tasks in session.execute(select(Run.id, Run.config, Run.stage_tasks)):
        models = config.get("models", {})
        if config.get("benchmark") == benchmark and models.get("solve") == solve:
            matching.append((run_id, models.get("improve") == improve))
            offered[run_id] = sum(len(ids) for ids in stage_tasks)
    if not matching:
        return None
    run_ids = [run_id for run_id, _ in matching]
    finished = (
        Evaluation.run_id.in_(run_ids),
        Evaluation.status == EvaluationStatus.DONE,
        Evaluation.dispatched_at.is_not(None),
        Evaluation.finished_at.is_not(None),
    )
    rows = session.execute(
        select(
            Evaluation.cost_usd,
            Evaluation.prompt_tokens + Evaluation.completion_tokens,
            Evaluation.dispatched_at,
            Evaluation.finished_at,
            Evaluation.run_id,
            Evaluation.agent_id,
        ).where(*finished)
    ).all()
    if not rows:
        return None
    seconds = [_seconds(sent, done) for _, _, sent, done, _, _ in rows]
    same_improver = [run_id for run_id, same in matching if same]
    steps = _steps(session, same_improver)
    pairs = {(row[4], row[5]) for row in rows}
    return History(
        runs=len({row[4] for row in rows}),
        evaluations=len(rows),
        agents=len(pairs),
        reach=min(1.0, len(rows) / max(1, sum(offered[run_id] for run_id, _ in pairs))),
        usd_per_evaluation=sum(row[0] for row in rows) / len(rows),
        tokens_per_evaluation=sum(row[1] for row in rows) / len(rows),
        seconds_per_evaluation=sum(seconds) / len(seconds),
        **steps,
    )


def _steps(session: Session, run_ids: list[str]) -> dict[str, Any]:
    """Mean cost, tokens and duration of finished steps (diagnose and improve calls) in these runs."""
    empty = {"steps": 0, "usd_per_step": 0.0, "tokens_per_step": 0.0, "seconds_per_step": 0.0}
    if not run_ids:
        return empty
    rows = session.execute(
        select(Step.id, Step.dispatched_at, Step.finished_at).where(
            Step.run_id.in_(run_ids), Step.dispatched_at.is_not(None), Step.finished_at.is_not(None)
        )
    ).all()
    if not rows:
        return empty
    usd, tokens = session.execute(
        select(
            func.coalesce(func.sum(LLMUsage.cost_usd), 0.0),
            func.coalesce(func.sum(LLMUsage.prompt_tokens + LLMUsage.completion_tokens), 0),
        ).where(LLMUsage.run_id.in_(run_ids), LLMUsage.purpose.in_(IMPROVE_PURPOSES))
    ).one()
    seconds = [_seconds(sent, done) for _, sent, done in rows]
    return {
        "steps": len(rows),
        "usd_per_step": float(usd) / len(rows),
        "tokens_per_step": float(tokens) / len(rows),
        "seconds_per_step": sum(seconds) / len(rows),
    }


def _seconds(sent: datetime | None, done: datetime | None) -> float:
    return 0.0 if sent is None or done is None else max(0.0, (done - sent).total_seconds())
