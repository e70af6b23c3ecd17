"""A run's policy: its selection strategy's hooks, then those of the run's own features.

The tick calls this chain and nothing else (`service.selection.policy` says which hook runs
when). The strategy comes first: it draws the parents, and its bookkeeping runs before the
features'. A feature whose configuration is off does nothing in its hooks.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from service.archive.store import Archive
from service.db.models import Run
from service.driver.checkpoints import Checkpoints
from service.driver.crossover import Crossover
from service.driver.epochs import Epochs
from service.driver.heldout import HeldOut
from service.driver.ledger import DatabaseLedger
from service.plan import RunPlan
from service.selection.policy import PolicyChain, RunScope


def run_policy(session: Session, run: Run, plan: RunPlan, archive: Archive | None) -> PolicyChain:
    """The hooks of the run, in the order the tick asks them."""
    features = [
        Epochs(session, run, plan),
        Checkpoints(session, run, plan),  # before the held-out phase: its pick is scored first
        HeldOut(session, run, plan),
        Crossover(session, run, plan, archive),
    ]
    return PolicyChain([plan.strategy, *features])


def run_scope(session: Session, run: Run, plan: RunPlan, *, steps_opened: int) -> RunScope:
    """What the hooks see of the run in this tick."""
    return RunScope(ledger=DatabaseLedger(session, run), plan=plan, steps_opened=steps_opened)
