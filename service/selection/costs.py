"""What an evaluation is expected to cost, per agent and per task, from the run's own records.

Tasks differ widely in cost (tokens, dollars and wall time per attempt), and so do agents: one
that reads every file spends more on each task than one that does not. The model keeps both:

    measured    an agent's own mean on a task it was evaluated on
    estimated   a task it was not: the task's mean over the agents that were, times the agent's
                own level (its mean ratio to those task means; 1 for an agent not measured yet);
                a task no agent was measured on: the run's mean per evaluation, times that level

Each figure (dollars, tokens, seconds) is estimated on its own. With no recorded evaluation
there is nothing to go by: `expected` answers None. The driver builds the model from the run's
finished selection evaluations that really ran (copies of reused results cost nothing and
say nothing about cost; held-out ones are left out, as everywhere selection looks).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

UNITS = ("usd", "tokens", "seconds")


class Cost(BaseModel):
    """The cost of one or more evaluations: dollars, tokens (prompt and completion), seconds."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    usd: float = Field(ge=0.0)
    tokens: float = Field(ge=0.0)
    seconds: float = Field(ge=0.0)

    def of(self, unit: str) -> float:
        value: float = getattr(self, unit)
        return value


@dataclass(frozen=True)
class CostSample:
    """One finished evaluation's cost."""

    agent_id: str
    task_id: str
    usd: float
    tokens: float
    seconds: float


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


class CostModel:
    """Expected costs from `samples` (see the module's docstring)."""

    def __init__(self, samples: Iterable[CostSample]) -> None:
        by_pair: dict[tuple[str, str], list[CostSample]] = defaultdict(list)
        for sample in samples:
            by_pair[(sample.agent_id, sample.task_id)].append(sample)
        self._own = {pair: _costs(rows) for pair, rows in by_pair.items()}
        by_task: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
        for (_, task), cost in self._own.items():
            by_task[task].append(cost)
        self._task = {task: _columns(rows) for task, rows in by_task.items()}
        self._overall = _columns(list(self._own.values())) if self._own else None
        ratios: dict[str, list[list[float]]] = defaultdict(lambda: [[], [], []])
        for (agent, task), cost in self._own.items():
            for i, (own, typical) in enumerate(zip(cost, self._task[task], strict=True)):
                if typical > 0:
                    ratios[agent][i].append(own / typical)
        self._level = {
            agent: tuple(_mean(r) if r else 1.0 for r in per_unit) for agent, per_unit in ratios.items()
        }

    @property
    def empty(self) -> bool:
        return self._overall is None

    def per_task(self, agent_id: str, task_id: str) -> Cost | None:
        """One evaluation of `agent_id` on `task_id`: measured, else estimated; None with no records."""
        own = self._own.get((agent_id, task_id))
        if own is not None:
            return _cost(own)
        base = self._task.get(task_id, self._overall)
        if base is None:
            return None
        level = self._level.get(agent_id, (1.0, 1.0, 1.0))
        return _cost(tuple(b * x for b, x in zip(base, level, strict=True)))

    def expected(self, agent_id: str, task_ids: Sequence[str]) -> Cost | None:
        """One evaluation of `agent_id` on each of `task_ids`, summed; None with no records."""
        costs = [self.per_task(agent_id, task) for task in task_ids]
        if not costs or any(cost is None for cost in costs):
            return None
        known = [cost for cost in costs if cost is not None]
        return Cost(
            usd=sum(c.usd for c in known),
            tokens=sum(c.tokens for c in known),
            seconds=sum(c.seconds for c in known),
        )


def _costs(rows: Sequence[CostSample]) -> tuple[float, float, float]:
    return (_mean([r.usd for r in rows]), _mean([r.tokens for r in rows]), _mean([r.seconds for r in rows]))


def _columns(rows: Sequence[tuple[float, float, float]]) -> tuple[float, float, float]:
    return (_mean([r[0] for r in rows]), _mean([r[1] for r in rows]), _mean([r[2] for r in rows]))


def _cost(values: tuple[float, ...]) -> Cost:
    usd, tokens, seconds = (max(0.0, v) for v in values)
    return Cost(usd=usd, tokens=tokens, seconds=seconds)


def common_unit(costs: Sequence[Cost | None]) -> str | None:
    """The first of dollars, tokens, seconds in which every cost is known and above 0 (a run on a
    free local model still differs in tokens); None if there is none."""
    if not costs or any(cost is None for cost in costs):
        return None
    known = [cost for cost in costs if cost is not None]
    return next((unit for unit in UNITS if all(cost.of(unit) > 0 for cost in known)), None)
