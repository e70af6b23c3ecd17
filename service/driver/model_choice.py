"""Each step's improve model: chosen once, at its first dispatch, and kept on its row.

`models.improve_choice: first` sends every step with `models.improve`'s first name;
`bandit` asks service/selection/model_bandit.py, given what the run's earlier steps gained and
spent with each name. Either way the other names follow as fallbacks (worker/llm/fallback.py),
and the choice, with the bandit's view of each model when it chose, is stored on the step
(`Step.model_choice`, shown by `GET /api/runs/{id}/steps`), so a re-dispatch sends the same.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from service.db.models import LLMUsage, Run, RunAgent, Step
from service.lifecycle import STEP_IN_FLIGHT, StepStatus
from service.plan import RunPlan
from service.selection.model_bandit import Pull, choose


def improve_choice(session: Session, run: Run, plan: RunPlan, step: Step) -> dict[str, Any]:
    """The step's stored choice, made now if it has none: {model, why, reason, fallbacks, arms}."""
    if step.model_choice is not None:
        return step.model_choice
    names = plan.models.chain("improve")
    arms: list[dict[str, Any]] | None = None
    if plan.models.improve_choice == "bandit":
        picked = choose(
            names, _pulls(session, run, step), seed=f"{plan.rng_seed}:improve-model:{step.number}"
        )
        model, why, reason = picked.model, "bandit", picked.why
        arms = [arm.model_dump(mode="json") for arm in picked.arms]
    else:
        model, why, reason = names[0], "first", f"the first of models.improve ({names[0]})"
    step.model_choice = {
        "model": model,
        "why": why,
        "reason": reason,
        "fallbacks": [name for name in names if name != model],
        "arms": arms,
    }
    return step.model_choice


def _pulls(session: Session, run: Run, step: Step) -> list[Pull]:
    """The run's earlier steps that chose a model: what each gained (None: in flight) and spent."""
    rows = session.scalars(
        select(Step)
        .where(Step.run_id == run.id, Step.id != step.id, Step.model_choice.is_not(None))
        .order_by(Step.number)
    ).all()
    spent = dict(
        session.execute(
            select(LLMUsage.step_id, func.sum(LLMUsage.cost_usd))
            .where(LLMUsage.run_id == run.id, LLMUsage.step_id.is_not(None))
            .group_by(LLMUsage.step_id)
        ).all()
    )
    scores = dict(
        session.execute(select(RunAgent.agent_id, RunAgent.score).where(RunAgent.run_id == run.id)).all()
    )
    pulls = []
    for row in rows:
        assert row.model_choice is not None
        gain: float | None = 0.0
        if row.status in STEP_IN_FLIGHT:
            gain = None
        elif row.status == StepStatus.ADMITTED and row.child_id is not None:
            gain = (scores.get(row.child_id) or 0.0) - (scores.get(row.parent_id) or 0.0)
        pulls.append(
            Pull(model=str(row.model_choice["model"]), gain=gain, usd=float(spent.get(row.id) or 0.0))
        )
    return pulls
