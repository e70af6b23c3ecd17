"""Evaluation policy names as a run config writes them (`evaluation.policy`) -> policies."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from contracts.config import EvaluationConfig, RacingConfig
from service.selection.evaluation import EvaluationPolicy, FixedStages
from service.selection.racing import Racing


class UnknownEvaluationPolicyError(ValueError):
    """The run config names an evaluation policy that does not exist."""


Factory = Callable[[EvaluationConfig], EvaluationPolicy]
_registered: dict[str, Factory] = {
    FixedStages.name: lambda config: FixedStages(),
    Racing.name: lambda config: Racing(config.racing or RacingConfig()),
}
EVALUATION_POLICIES: Mapping[str, Factory] = MappingProxyType(_registered)  # a read-only view


def register_evaluation_policy(name: str, factory: Factory) -> None:
    """Make `factory` (the run's `evaluation` settings -> a policy) known as `name`; a name
    another factory holds is refused with a ValueError naming it."""
    held = _registered.get(name)
    if held is not None and held is not factory:
        raise ValueError(f"evaluation policy {name!r} is already registered")
    _registered[name] = factory


def known_evaluation_policies() -> list[str]:
    return sorted(EVALUATION_POLICIES)


def make_evaluation_policy(config: EvaluationConfig) -> EvaluationPolicy:
    """The policy `config.policy` names; `UnknownEvaluationPolicyError` names the known ones."""
    factory = EVALUATION_POLICIES.get(config.policy)
    if factory is None:
        raise UnknownEvaluationPolicyError(
            f"unknown evaluation policy {config.policy!r}; known: {', '.join(known_evaluation_policies())}"
        )
    return factory(config)
