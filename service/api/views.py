"""The API's answer shapes: every `service.api.schemas` object a router returns is built here,
with the read-side queries only the API needs. Routers validate the request and call one
function; the read helpers the driver shares live in `service.queries`."""

from __future__ import annotations

import json

from sqlalchemy import BigInteger, func, literal, select, text
from sqlalchemy.orm import Session

from contracts.errors import NotFoundError
from contracts.events import CheckpointReached, CheckpointScored, kind_of
from contracts.scores import ScoreCounts, fraction
from service import queries
from service.api.schemas import (
    AgentDetail,
    AgentInRun,
    AgentPublic,
    Budget,
    CheckpointPublic,
    EpochPublic,
    EpochStage,
    EvaluationDetail,
    EvaluationPublic,
    Progress,
    PurposeUsage,
    RunAgentPublic,
    RunDetail,
    RunPublic,
    RunUsage,
    StageScorePublic,
    UsagePoint,
)
from service.db.models import Agent, Evaluation, Event, LLMUsage, Run, RunAgent, StageScore, Step
from service.leases import outstanding
from service.lifecycle import STEP_IN_FLIGHT
from service.plan import stored_plan
from service.runs import elapsed_seconds


def list_runs(session: Session, *, limit: int, offset: int) -> tuple[list[RunPublic], int]:
    total = session.scalar(select(func.count()).select_from(Run)) or 0
    runs = session.scalars(
        select(Run).order_by(Run.created_at.desc(), Run.id).limit(limit).offset(offset)
    ).all()
    return [run_public(session, run=run) for run in runs], total


def run_public(session: Session, *, run: Run) -> RunPublic:
    return RunPublic(**_run_fields(session, run))


def run_detail(session: Session, *, run: Run) -> RunDetail:
    plan = stored_plan(run)
    epochs = [
        EpochPublic(
            epoch=epoch.number,
            after_steps=epoch.after_steps,
            stages=[EpochStage(task_ids=list(s.task_ids), threshold=s.threshold) for s in epoch.stages],
            judge=epoch.judge,
            rescore_top_k=epoch.rescore_top_k,
            started=epoch.number <= run.epoch,
        )
        for epoch in plan.epochs
    ]
    return RunDetail(
        **_run_fields(session, run),
        config=run.config,
        stage_tasks=[list(stage.task_ids) for stage in plan.stages],  # epoch 0's, as before epochs
        epoch=run.epoch,
        epochs=epochs,
        checkpoints=checkpoints(session, run=run),
    )


def checkpoints(session: Session, *, run: Run) -> list[CheckpointPublic]:
    """The run's checkpoints reached so far, each with its scoring once done (from its events)."""
    kinds = [kind_of(CheckpointReached), kind_of(CheckpointScored)]
    rows = session.scalars(
        select(Event).where(Event.run_id == run.id, Event.kind.in_(kinds)).order_by(Event.id)
    ).all()
    reached: dict[float, CheckpointPublic] = {}
    for row in rows:
        if row.kind == kind_of(CheckpointReached):
            at = CheckpointReached.model_validate(row.payload)
            reached[at.fraction] = CheckpointPublic(
                fraction=at.fraction,
                spent=at.spent,
                final=at.final,
                reached_at=row.created_at,
                agent_id=at.agent_id,
                selection_low=at.selection_low,
                chosen_by=at.chosen_by,
            )
            continue
        done = CheckpointScored.model_validate(row.payload)
        if done.fraction in reached:
            reached[done.fraction] = reached[done.fraction].model_copy(
                update={
                    "scored_at": row.created_at,
                    "heldout_resolved": done.resolved,
                    "heldout_total": done.total,
                    "heldout_low": done.low,
                    "heldout_high": done.high,
                    "pick_agent_id": done.pick_agent_id,
                }
            )
    return list(reached.values())


def _run_fields(session: Session, run: Run) -> dict[str, object]:
    budget = run.config.get("budget", {})
    usd, tokens = queries.usage_totals(session, LLMUsage.run_id == run.id)
    reserved = outstanding(session, run_id=run.id)
    children = session.scalar(
        select(func.count()).select_from(Step).where(Step.run_id == run.id, Step.child_id.is_not(None))
    )
    in_flight = session.scalar(
        select(func.count()).select_from(Step).where(Step.run_id == run.id, Step.status.in_(STEP_IN_FLIGHT))
    )
    best_id = next(iter(queries.top_agents(session, run_id=run.id, k=1)), None)
    best = session.get(RunAgent, (run.id, best_id)) if best_id is not None else None
    counts = ScoreCounts.of(best) if best else ScoreCounts()
    reused = session.scalar(
        select(func.count())
        .select_from(Evaluation)
        .where(Evaluation.run_id == run.id, Evaluation.reused_from.is_not(None))
    )
    return {
        "id": run.id,
        "name": run.name,
        "status": run.status,
        "stop_reason": run.stop_reason,
        "seed_agent_id": run.seed_agent_id,
        "created_at": run.created_at,
        "finished_at": run.finished_at,
        "budget": Budget(
            max_children=budget.get("max_children", 0),
            max_usd=budget.get("max_usd"),
            max_tokens=budget.get("max_tokens"),
            max_wall_time_s=budget.get("max_wall_time_s"),
        ),
        "progress": Progress(
            children=children or 0,
            usd=float(usd),
            tokens=int(tokens),
            usd_reserved=reserved.usd,
            tokens_reserved=reserved.tokens,
            elapsed_s=elapsed_seconds(run),
            steps_in_flight=in_flight or 0,
            best_score=best.score if best else None,
            best_agent_id=best_id,
            best_score_low=counts.score_low,
            best_score_high=counts.score_high,
            best_heldout_score=fraction(counts.heldout_resolved, counts.heldout_total),
            best_heldout_low=counts.heldout_low,
            best_heldout_high=counts.heldout_high,
            evaluations_reused=reused or 0,
        ),
    }


def lineage(session: Session, *, run_id: str) -> dict[str, object]:
    """Every agent of a run in one query: the tree the dashboard and CLI draw.

    Returns plain dicts in the `Lineage` shape: with 10,000 agents, building and
    re-validating pydantic models would cost more than the query itself.
    """
    queries.get_run(session, run_id=run_id)
    rows = session.execute(
        select(
            RunAgent.agent_id,
            RunAgent.parent_id,
            RunAgent.status,
            RunAgent.reason,
            RunAgent.score,
            RunAgent.stage_reached,
            RunAgent.children,
            RunAgent.step_number,
            RunAgent.created_at,
            *_LINEAGE_EXTRA.values(),
        )
        .where(RunAgent.run_id == run_id)
        .order_by(RunAgent.created_at, RunAgent.agent_id)
    ).all()
    nodes = [
        {
            "id": agent_id,
            "parent_id": parent_id,
            "status": status,
            "reason": reason,
            "score": score,
            "stage_reached": stage_reached,
            "children": children,
            "step": step,
            "created_at": created_at.isoformat(),
        }
        | dict(zip(_LINEAGE_EXTRA, extra, strict=True))
        for (
            agent_id,
            parent_id,
            status,
            reason,
            score,
            stage_reached,
            children,
            step,
            created_at,
            *extra,
        ) in rows
    ]
    return {"run_id": run_id, "nodes": nodes}


# Lineage fields after `created_at`, in order: the node's key -> its column.
_LINEAGE_EXTRA = {
    "second_parent_id": RunAgent.second_parent_id,
    "resolved": RunAgent.resolved,
    "attempted": RunAgent.attempted,
    "epoch": RunAgent.epoch,
    "heldout_resolved": RunAgent.heldout_resolved,
    "heldout_total": RunAgent.heldout_total,
    "heldout_compared": RunAgent.heldout_compared,
    "island": RunAgent.island,
    "niche": RunAgent.niche,
    "group": RunAgent.group_id,
    "same_as": RunAgent.same_as,
    "meta_changed": RunAgent.meta_changed,
    "race_stop": RunAgent.race_stop,
}

# The lineage's nodes as one JSON text, built by PostgreSQL in `lineage`'s shape and order: at
# 100,000 agents, loading the rows into Python and encoding them took 2-3 s (under load), and
# json_agg(json_build_object(...)) still 1.3-1.8 s; concatenating each row's text and joining
# them (ordered in the aggregate, which guarantees it) takes a third to half of that. Ids and
# statuses are hex or fixed words (nothing to escape); the free-text reason goes through
# to_json. float8's text is the shortest exact form, as Python's repr; times are written as
# Python's isoformat() writes an aware UTC time.
_PG_LINEAGE_NODES = text(
    """
    SELECT '[' || coalesce(string_agg(node, ',' ORDER BY created_at, agent_id), '') || ']' FROM (
        SELECT created_at, agent_id, concat(
            '{"id":"', agent_id,
            '","parent_id":', coalesce('"' || parent_id || '"', 'null'),
            ',"status":"', status,
            '","reason":', coalesce(to_json(reason)::text, 'null'),
            ',"score":', coalesce(score::text, 'null'),
            ',"stage_reached":', stage_reached,
            ',"children":', children,
            ',"step":', coalesce(step_number::text, 'null'),
            ',"created_at":"', to_char(created_at AT TIME ZONE 'UTC',
                CASE WHEN date_trunc('second', created_at) = created_at
                     THEN 'YYYY-MM-DD"T"HH24:MI:SS' ELSE 'YYYY-MM-DD"T"HH24:MI:SS.US' END),
            '+00:00","second_parent_id":', coalesce('"' || second_parent_id || '"', 'null'),
            ',"resolved":', coalesce(resolved::text, 'null'),
            ',"attempted":', coalesce(attempted::text, 'null'),
            ',"epoch":', epoch,
            ',"heldout_resolved":', coalesce(heldout_resolved::text, 'null'),
            ',"heldout_total":', coalesce(heldout_total::text, 'null'),
            ',"heldout_compared":', coalesce(heldout_compared::text, 'null'),
            ',"island":', coalesce(island::text, 'null'),
            ',"niche":', coalesce(to_json(niche)::text, 'null'),
            ',"group":', coalesce(to_json(group_id)::text, 'null'),
            ',"same_as":', coalesce('"' || same_as || '"', 'null'),
            ',"meta_changed":', coalesce(meta_changed::text, 'null'),
            ',"race_stop":', coalesce('"' || race_stop || '"', 'null'),
            '}') AS node
        FROM run_agents WHERE run_id = :run_id
    ) AS nodes
    """
)


def lineage_json(session: Session, *, run_id: str, extra: dict[str, int] | None = None) -> str:
    """`lineage` as JSON text (with `extra` top-level fields): built in the database on PostgreSQL."""
    if session.get_bind().dialect.name != "postgresql":
        return json.dumps(lineage(session, run_id=run_id) | (extra or {}), separators=(",", ":"))
    queries.get_run(session, run_id=run_id)
    nodes = session.scalar(_PG_LINEAGE_NODES, {"run_id": run_id})
    head = json.dumps({"run_id": run_id} | (extra or {}), separators=(",", ":"))
    return f'{head[:-1]},"nodes":{nodes}}}'


def run_agents(
    session: Session, *, run_id: str, limit: int, offset: int, status: str | None = None
) -> tuple[list[RunAgentPublic], int]:
    queries.get_run(session, run_id=run_id)
    where = [RunAgent.run_id == run_id] + ([RunAgent.status == status] if status else [])
    total = session.scalar(select(func.count()).select_from(RunAgent).where(*where)) or 0
    rows = session.scalars(
        select(RunAgent)
        .where(*where)
        # Scored agents first, the newest utility's first (service/driver/epochs.py), best first.
        .order_by(RunAgent.score.is_(None), RunAgent.epoch.desc(), RunAgent.score.desc(), RunAgent.created_at)
        .limit(limit)
        .offset(offset)
    ).all()
    return [_run_agent_public(row) for row in rows], total


def require_in_run(session: Session, *, run_id: str, agent_id: str) -> None:
    """NotFoundError unless the agent is in the run's archive, or was evaluated in the run."""
    if session.get(RunAgent, (run_id, agent_id)) is not None:
        return
    evaluated = select(Evaluation.id).where(Evaluation.run_id == run_id, Evaluation.agent_id == agent_id)
    if session.scalar(evaluated.limit(1)) is None:
        raise NotFoundError(f"agent {agent_id} is not in run {run_id}")


def _run_agent_public(row: RunAgent) -> RunAgentPublic:
    return RunAgentPublic(
        id=row.agent_id,
        parent_id=row.parent_id,
        status=row.status,
        reason=row.reason,
        score=row.score,
        stage_reached=row.stage_reached,
        children=row.children,
        step=row.step_number,
        created_at=row.created_at,
        second_parent_id=row.second_parent_id,
        epoch=row.epoch,
        heldout_score=fraction(row.heldout_resolved, row.heldout_total),
        island=row.island,
        niche=row.niche,
        group=row.group_id,
        meta_changed=row.meta_changed,
        race_stop=row.race_stop,
        **ScoreCounts.of(row).model_dump(),
    )


def agent_detail(session: Session, *, agent_id: str) -> AgentDetail:
    agent = queries.get_agent(session, agent_id=agent_id)
    # Ordered, so that the answer does not depend on where the database keeps rows (a restore moves them).
    children = session.scalars(
        select(Agent.id).where(Agent.parent_id == agent_id).order_by(Agent.created_at, Agent.id)
    ).all()
    memberships = session.scalars(
        select(RunAgent).where(RunAgent.agent_id == agent_id).order_by(RunAgent.created_at, RunAgent.run_id)
    ).all()
    return AgentDetail(
        id=agent.id,
        parent_id=agent.parent_id,
        kind=agent.kind,
        name=agent.name,
        created_at=agent.created_at,
        manifest=agent.manifest,
        second_parent_id=agent.second_parent_id,
        lineage=queries.lineage_ids(session, agent_id=agent_id),
        children=list(children),
        runs=[_agent_in_run(session, member) for member in memberships],
    )


def _agent_in_run(session: Session, member: RunAgent) -> AgentInRun:
    stages = session.scalars(
        select(StageScore)
        .where(StageScore.run_id == member.run_id, StageScore.agent_id == member.agent_id)
        .order_by(StageScore.epoch, StageScore.stage)
    ).all()
    evaluations = session.scalars(
        select(Evaluation)
        .where(Evaluation.run_id == member.run_id, Evaluation.agent_id == member.agent_id)
        .order_by(Evaluation.epoch, Evaluation.stage, Evaluation.task_id)
    ).all()
    diagnosis = session.scalar(
        select(Step.diagnosis).where(Step.run_id == member.run_id, Step.child_id == member.agent_id)
    )
    usd, tokens = queries.usage_totals(
        session, LLMUsage.run_id == member.run_id, LLMUsage.agent_id == member.agent_id
    )
    return AgentInRun(
        run_id=member.run_id,
        status=member.status,
        reason=member.reason,
        score=member.score,
        epoch=member.epoch,
        stages=[StageScorePublic.model_validate(s, from_attributes=True) for s in stages],
        race_stop=member.race_stop,
        diagnosis=diagnosis,
        evaluations=[EvaluationPublic.model_validate(e, from_attributes=True) for e in evaluations],
        usd=float(usd),
        tokens=int(tokens),
        **ScoreCounts.of(member).model_dump(),
    )


def list_agents(
    session: Session, *, limit: int, offset: int, kind: str | None
) -> tuple[list[AgentPublic], int]:
    where = [Agent.kind == kind] if kind else []
    total = session.scalar(select(func.count()).select_from(Agent).where(*where)) or 0
    rows = session.scalars(
        select(Agent).where(*where).order_by(Agent.created_at.desc(), Agent.id).limit(limit).offset(offset)
    ).all()
    return [AgentPublic.model_validate(a, from_attributes=True) for a in rows], total


def evaluation_detail(session: Session, *, agent_id: str, evaluation_id: str) -> EvaluationDetail:
    evaluation = session.get(Evaluation, evaluation_id)
    if evaluation is None or evaluation.agent_id != agent_id:
        raise NotFoundError(f"evaluation {evaluation_id} of agent {agent_id} not found")
    return EvaluationDetail.model_validate(evaluation, from_attributes=True)


def run_usage(session: Session, *, run_id: str, points: int) -> RunUsage:
    """Cumulative cost and tokens over time (at most `points` points), and totals per purpose."""
    queries.get_run(session, run_id=run_id)
    rows = session.execute(
        select(
            LLMUsage.created_at,
            LLMUsage.purpose,
            LLMUsage.cost_usd,
            LLMUsage.prompt_tokens + LLMUsage.completion_tokens,
        )
        .where(LLMUsage.run_id == run_id)
        .order_by(LLMUsage.created_at, LLMUsage.id)
    ).all()
    series: list[UsagePoint] = []
    purposes: dict[str, PurposeUsage] = {}
    usd, tokens = 0.0, 0
    stride = max(1, -(-len(rows) // points))  # ceil: keep at most `points` points
    for index, (at, purpose, cost, used) in enumerate(rows):
        usd += cost
        tokens += used
        total = purposes.setdefault(purpose, PurposeUsage(purpose=purpose, usd=0.0, tokens=0, calls=0))
        total.usd += cost
        total.tokens += used
        total.calls += 1
        if (index + 1) % stride == 0 or index == len(rows) - 1:
            series.append(UsagePoint(at=at, usd=usd, tokens=tokens, calls=index + 1))
    by_purpose = sorted(purposes.values(), key=lambda p: p.usd, reverse=True)
    return RunUsage(run_id=run_id, points=series, by_purpose=by_purpose)


def live_lineage_json(session: Session, *, run_id: str) -> str:
    """The newest event id read first (`cursor`), then the tree: an event written between the two
    reads is delivered again by the next poll; none can fall between them unseen."""
    queries.get_run(session, run_id=run_id)
    cursor = session.scalar(select(func.max(Event.id)).where(Event.run_id == run_id)) or 0
    return lineage_json(session, run_id=run_id, extra={"cursor": cursor})


def events_after(session: Session, *, run_id: str, after: int, limit: int) -> list[Event]:
    """The run's events after the id `after`, oldest first."""
    queries.get_run(session, run_id=run_id)
    # Compared as a 64-bit integer: bound as the 32-bit column, a large `after` fails in PostgreSQL.
    return list(
        session.scalars(
            select(Event)
            .where(Event.run_id == run_id, Event.id > literal(after, BigInteger))
            .order_by(Event.id)
            .limit(limit)
        )
    )
