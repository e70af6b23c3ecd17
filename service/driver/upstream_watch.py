"""A run whose model upstream keeps failing stops, saying so, instead of scoring every agent 0.

An evaluation whose every model call failed at the upstream is an infrastructure failure
(`upstream_failed` on its result, set by the worker); `budget.max_upstream_failures` of them in
a row, as they finished, mean the server is down or refuses the key: nothing more is measured.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.db.models import Evaluation, Run
from service.lifecycle import EvaluationStatus
from service.plan import RunPlan


def upstream_stop(session: Session, run: Run, plan: RunPlan) -> str | None:
    """The stop reason when the run's last `max_upstream_failures` evaluations all failed at the
    model upstream; None otherwise."""
    limit = plan.budget.max_upstream_failures
    if limit is None:
        return None
    last = session.scalars(
        select(Evaluation)
        .where(
            Evaluation.run_id == run.id,
            Evaluation.status == EvaluationStatus.DONE,
            Evaluation.finished_at.is_not(None),
        )
        .order_by(Evaluation.finished_at.desc(), Evaluation.id.desc())
        .limit(limit)
    ).all()
    if len(last) < limit or not all(_upstream_failed(e) for e in last):
        return None
    cause = (last[0].result or {}).get("infrastructure_failure") or "no cause recorded"
    return (
        f"model upstream failing: every model call of the last {limit} evaluations failed there"
        f" (budget.max_upstream_failures); the last: {cause}"
    )


def _upstream_failed(evaluation: Evaluation) -> bool:
    return bool((evaluation.result or {}).get("upstream_failed"))
