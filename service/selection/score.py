"""Strategies that weigh candidates by score and child count: DGM's and simple baselines."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from pydantic import Field

from service.selection.base import Candidate, StrategyBase, checked
from service.selection.costs import common_unit
from service.selection.policy import RunScope


def _log_sigmoid(x: float) -> float:
    """log(1 / (1 + e^-x)) without overflow for any finite x."""
    if x >= 0:
        return -math.log1p(math.exp(-x))
    return x - math.log1p(math.exp(x))


def _normalise_logs(log_weights: dict[str, float]) -> dict[str, float]:
    top = max(log_weights.values())
    weights = {i: math.exp(w - top) for i, w in log_weights.items()}
    total = math.fsum(weights.values())
    return {i: w / total for i, w in weights.items()}


def _uniform(candidates: Sequence[Candidate]) -> dict[str, float]:
    ordered = checked(candidates)
    return {c.agent_id: 1.0 / len(ordered) for c in ordered}


class ScoreChildProp(StrategyBase):
    """DGM: weight = sigmoid(lambda * (score - m)) / (1 + children), normalised.

    Prefers good agents while spreading children over them. The weights are
    computed in log space, so a large `lambda` cannot overflow or underflow
    them all to zero. Params: `lambda` (or `lambda_`) >= 0 and `m` in [0, 1], and
    `cost_weight` >= 0 (default 0): each weight divided by the candidate's expected cost
    (`Candidate.expected_cost`, in the first unit every candidate has above 0) to that power.
    """

    name: ClassVar[str] = "score_child_prop"

    lambda_: float = Field(default=10.0, ge=0.0, alias="lambda")
    m: float = Field(default=0.5, ge=0.0, le=1.0)
    # 0: DGM's rule exactly. Above 0, each weight is divided by the expected cost of evaluating a
    # child of the candidate on the first stage, to this power (1: expected gain per unit cost).
    cost_weight: float = Field(default=0.0, ge=0.0, le=10.0)

    def prepare_draw(self, scope: RunScope, pool: Sequence[Candidate], number: int) -> Sequence[Candidate]:
        if self.cost_weight == 0.0:
            return pool
        costs = scope.ledger.costs()
        tasks = scope.plan.stages[0].task_ids
        return [c.model_copy(update={"expected_cost": costs.expected(c.agent_id, tasks)}) for c in pool]

    def probabilities(self, candidates: Sequence[Candidate]) -> dict[str, float]:
        ordered = checked(candidates)
        logs = {
            c.agent_id: _log_sigmoid(self.lambda_ * (c.score - self.m)) - math.log1p(c.children)
            for c in ordered
        }
        unit = common_unit([c.expected_cost for c in ordered]) if self.cost_weight > 0 else None
        if unit is not None:
            for c in ordered:
                assert c.expected_cost is not None  # common_unit saw every cost
                logs[c.agent_id] -= self.cost_weight * math.log(c.expected_cost.of(unit))
        return _normalise_logs(logs)


class ScoreProp(StrategyBase):
    """Weight proportional to score; uniform when every score is 0."""

    name: ClassVar[str] = "score_prop"

    def probabilities(self, candidates: Sequence[Candidate]) -> dict[str, float]:
        ordered = checked(candidates)
        total = math.fsum(c.score for c in ordered)
        if total == 0.0:
            return _uniform(ordered)
        return {c.agent_id: c.score / total for c in ordered}


class Best(StrategyBase):
    """Always the best: highest score, then fewest children, then lowest agent id.

    Unlike DGM's `best` (the top k distinct agents), every one of the k draws
    is this single agent, consistent with drawing with replacement.
    """

    name: ClassVar[str] = "best"

    def probabilities(self, candidates: Sequence[Candidate]) -> dict[str, float]:
        ordered = checked(candidates)
        winner = min(ordered, key=lambda c: (-c.score, c.children, c.agent_id))
        return {c.agent_id: 1.0 if c is winner else 0.0 for c in ordered}


class Uniform(StrategyBase):
    """Every candidate equally likely."""

    name: ClassVar[str] = "random"

    def probabilities(self, candidates: Sequence[Candidate]) -> dict[str, float]:
        return _uniform(candidates)
