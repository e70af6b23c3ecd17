"""Parent selection: strategies behind one protocol, chosen per run by name."""

from service.selection.base import Candidate, SelectionStrategy
from service.selection.hgm import Hgm
from service.selection.registry import (
    STRATEGIES,
    UnknownStrategyError,
    known_strategies,
    make_strategy,
)
from service.selection.score import Best, ScoreChildProp, ScoreProp, Uniform

__all__ = [
    "STRATEGIES",
    "Best",
    "Candidate",
    "Hgm",
    "ScoreChildProp",
    "ScoreProp",
    "SelectionStrategy",
    "Uniform",
    "UnknownStrategyError",
    "known_strategies",
    "make_strategy",
]
