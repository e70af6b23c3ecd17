"""`hgm-paper`: the Huxley-Gödel Machine's search loop as its authors' code runs it.

Read from metauto-ai/HGM (`hgm.py`, `tree.py`, `hgm_utils.py`, `config.yaml`), restated in
Clade's terms (docs/hgm-paper.md gives the line-by-line account):

- **Expanding and measuring are decoupled.** Each free worker either makes a child or runs ONE
  task on one agent. It expands when `n ** alpha >= nodes`, where `n` is the number of task
  evaluations of agents other than the seed (counted when sent), `nodes` the children made
  (failed ones do not count) plus the expansions under way, and `alpha` 0.6. After `n`
  evaluations a run has made about `floor(n ** 0.6)` children.
- **Before that rule, a first batch:** `min(5, int(parallelism ** alpha))` expansions, all
  finished before anything is measured.
- **What to measure:** every agent that has a task left it has not been given is a candidate;
  each draws theta from Beta(1 + passes, 1 + fails) over its *own* finished results (a child
  with none draws from Beta(1, 1)); the largest draw wins. It is given one task it has not
  seen, drawn at random from the run's stage tasks (HGM's `eval_random_level` 1.0; at 0 it is
  the first unseen task in the pool's order).
- **A new child is not evaluated when made:** it enters the archive at once, unmeasured, and is
  measured only when a Thompson draw picks it (the entry-stages hook, `entry_stages`).
- **Parents** (clade-metaproductivity): among agents with at least one pass of their own, each
  draws from Beta(1 + clade passes, 1 + clade fails), pooled over the agent and all its
  descendants (`Candidate.clade_*`); the largest draw is the parent (the `hgm` strategy's draw).
- **Budget:** 800 task evaluations (`budget.max_evaluations`, filled in at plan time when the
  run gives none; `budget.max_children` then defaults to the same number, which the expansion
  rule never reaches unless children keep failing).

What this loop keeps lives in the run's rows (its steps, members and evaluations, read through
the ledger), never in the strategy object; each draw's random stream is seeded from the run's
`rng_seed` and how many evaluations the run holds at that move, so a replay decides the same.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from pydantic import Field

from service.selection.base import Candidate, StrategyBase
from service.selection.hgm import Hgm
from service.selection.ledger import AgentTally
from service.selection.policy import EXPAND, Measure, Move, RunScope, StageView, Wait

HELDOUT = "heldout"  # held-out results never feed the search (service.driver.reuse.HELDOUT)
DEFAULT_MAX_EVALUATIONS = 800  # HGM's config.yaml: execution.max_task_evals
FIRST_EXPANSIONS_CAP = 5  # hgm.py: min(5, int(max_workers ** alpha)) children before any measure


@dataclass(frozen=True)
class Books:
    """What the loop reads of the run at one move."""

    seed: str
    admitted: tuple[str, ...]  # in the order they were made (the seed first), as HGM's tree lists them
    children_made: int  # admitted agents other than the seed
    steps_in_flight: tuple[int, ...]  # the numbers of the steps in flight
    records: Mapping[str, AgentTally]  # each agent's own results (held-out ones never count)
    evaluations: int  # every non-held-out evaluation of the epoch, done or pending

    def record(self, agent_id: str) -> AgentTally:
        return self.records.get(agent_id, NOTHING)

    @property
    def child_evaluations(self) -> int:
        """HGM's `n_task_evals`: evaluations of agents other than the seed, done or pending."""
        return sum(r.evaluations for agent, r in self.records.items() if agent != self.seed)

    @property
    def measuring(self) -> int:
        """Task measurements under way (one worker each)."""
        return sum(self.record(agent).pending_tasks for agent in self.admitted)

    def parents(self) -> list[str]:
        """Agents HGM may expand: a finite, positive mean of their own (at least one pass)."""
        return [a for a in self.admitted if self.record(a).passes > 0]


NOTHING = AgentTally()


def read_books(scope: RunScope) -> Books:
    ledger = scope.ledger
    made = sorted((m for m in ledger.members() if m.admitted), key=lambda m: (m.step_number or 0, m.agent_id))
    admitted = tuple(m.agent_id for m in made)
    # Counts, not rows: the loop reads the whole run at every move, a few times a tick.
    records = ledger.tallies()
    return Books(
        seed=ledger.seed_agent_id,
        admitted=admitted,
        children_made=sum(1 for a in admitted if a != ledger.seed_agent_id),
        steps_in_flight=tuple(s.number for s in ledger.steps() if s.in_flight),
        records=records,
        evaluations=sum(r.evaluations for r in records.values()),
    )


def tasks_given(scope: RunScope, agent_id: str) -> set[str]:
    """The tasks `agent_id` was given in the epoch (held-out ones left out), done or pending."""
    return {row.task_id for row in scope.ledger.evaluations([agent_id]) if row.purpose != HELDOUT}


def pool_of(stages: Sequence[StageView]) -> list[str]:
    """The run's stage tasks, each once, in stage order: what a measurement draws from."""
    return list(dict.fromkeys(task for stage in stages for task in stage.task_ids))


def expansion_due(evaluations: int, nodes: int, alpha: float) -> bool:
    """HGM's rule: expand while evaluations ** alpha >= nodes (made and under way)."""
    return bool(float(evaluations) ** alpha >= nodes)


def first_expansions(parallelism: int, alpha: float) -> int:
    """How many children HGM makes before it measures anything."""
    return min(FIRST_EXPANSIONS_CAP, int(parallelism**alpha))


def thompson_pick(records: Mapping[str, AgentTally], agents: Sequence[str], rng: random.Random) -> str:
    """The agent whose draw from Beta(1 + passes, 1 + fails) of its own results is largest; the
    draws are made in the order of `agents` (the order agents were made: a replay of the run on
    another archive, with other agent ids, draws the same)."""
    draws = [rng.betavariate(1 + records[a].passes, 1 + records[a].fails) for a in agents]
    return agents[max(range(len(agents)), key=draws.__getitem__)]


class HgmPaper(StrategyBase):
    """The Huxley-Gödel Machine's loop (see the module's docstring); `alpha` sets how fast the
    tree grows with evaluations, `eval_random_level` how often a measured task is a random
    unseen one rather than the first unseen one in the pool."""

    name: ClassVar[str] = "hgm-paper"

    alpha: float = Field(default=0.6, gt=0.0, le=1.0)
    eval_random_level: float = Field(default=1.0, ge=0.0, le=1.0)

    def _clade(self) -> Hgm:
        return Hgm(alpha=1.0, beta=1.0)  # HGM's TS_sample: Beta(1 + passes, 1 + fails)

    def probabilities(self, candidates: Sequence[Candidate]) -> dict[str, float]:
        return self._clade().probabilities(candidates)

    def select(self, candidates: Sequence[Candidate], rng: random.Random, k: int = 1) -> list[str]:
        return self._clade().select(candidates, rng, k)

    def budget_defaults(self) -> dict[str, int]:
        return {"max_evaluations": DEFAULT_MAX_EVALUATIONS, "max_children": DEFAULT_MAX_EVALUATIONS}

    def entry_stages(self, scope: RunScope, agent_id: str) -> Sequence[StageView] | None:
        """The seed walks the run's stages (HGM scores its initial agent on every task); a child
        walks none: it is admitted unmeasured, and measured when a draw picks it."""
        return None if agent_id == scope.ledger.seed_agent_id else ()

    def steps_allowed(self, scope: RunScope) -> int | None:
        """The workers free: the run's parallelism less the steps and measurements under way."""
        books = read_books(scope)
        return max(0, scope.plan.parallelism - len(books.steps_in_flight) - books.measuring)

    def prepare_draw(self, scope: RunScope, pool: Sequence[Candidate], number: int) -> Sequence[Candidate]:
        """Only agents with a pass of their own may be expanded (HGM skips a zero or unknown mean);
        if none has one, every candidate may (where HGM's draw would have had no node at all)."""
        parents = set(read_books(scope).parents())
        return [c for c in pool if c.agent_id in parents] or pool

    def next_move(self, scope: RunScope, number: int, chosen: Sequence[str]) -> Move:
        books = read_books(scope)
        if books.seed not in books.admitted:
            return Wait("the seed is still being scored")
        first = first_expansions(scope.plan.parallelism, self.alpha)
        if number <= first:
            return EXPAND
        opened_before = number - len(chosen)  # chosen: steps picked in this tick, not opened yet
        if opened_before <= first or any(n <= first for n in books.steps_in_flight):
            return Wait("HGM's first expansions are still at work")
        nodes = books.children_made + len(books.steps_in_flight) + len(chosen)
        if expansion_due(books.child_evaluations, nodes, self.alpha):
            return EXPAND
        pool = pool_of(scope.plan.stages)
        measurable = [a for a in books.admitted if books.record(a).tasks < len(pool)]
        if not measurable:
            # Every agent has seen every task: HGM's worker would idle; a new child can be measured.
            return EXPAND
        rng = random.Random(f"{scope.plan.rng_seed}:hgm-paper:{books.evaluations}:{number}:{len(chosen)}")
        records = {a: books.record(a) for a in measurable}
        agent = thompson_pick(records, measurable, rng)
        seen = tasks_given(scope, agent)
        unseen = [task for task in pool if task not in seen]
        task = rng.choice(unseen) if rng.random() < self.eval_random_level else unseen[0]
        return Measure(agent_id=agent, task_ids=(task,))
