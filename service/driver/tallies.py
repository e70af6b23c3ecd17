"""What an agent's finished selection evaluations of the run's current epoch add up to.

Held-out results (the held-out phase, checkpoints) never count: they measure the pick, and a
selection that read them would be choosing on the tasks meant to check it.
"""

from __future__ import annotations

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from service.db.models import Evaluation, Run
from service.driver.reuse import HELDOUT
from service.lifecycle import EvaluationStatus


def selection_tallies(session: Session, run: Run) -> dict[str, tuple[int, int]]:
    """Agent id -> (resolved, finished) over its finished non-held-out evaluations of the epoch."""
    rows = session.execute(
        select(
            Evaluation.agent_id,
            func.sum(case((Evaluation.resolved.is_(True), 1), else_=0)),
            func.count(),
        )
        .where(
            Evaluation.run_id == run.id,
            Evaluation.epoch == run.epoch,
            Evaluation.purpose != HELDOUT,
            Evaluation.status == EvaluationStatus.DONE,
        )
        .group_by(Evaluation.agent_id)
    )
    return {agent_id: (int(resolved or 0), int(done)) for agent_id, resolved, done in rows}
