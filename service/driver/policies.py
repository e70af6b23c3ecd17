"""A run's policy: its selection strategy's hooks, then those of the run's own features.

The tick calls this chain and nothing else (`service.selection.policy` says which hook runs
when). The strategy comes first: it draws the parents, and its bookkeeping runs before the
features'. A feature whose configuration is off does nothing in its hooks.
"""

from __future__ import annotations

from service.archive.store import Archive
from service.driver.crossover import Crossover
from service.driver.epochs import Epochs
from service.driver.heldout import HeldOut
from service.driver.plan import RunPlan
from service.selection.policy import PolicyChain


def run_policy(plan: RunPlan, archive: Archive | None) -> PolicyChain:
    """The hooks of `plan`'s run, in the order the tick asks them."""
    return PolicyChain([plan.strategy, Epochs(plan), HeldOut(plan), Crossover(plan, archive)])
