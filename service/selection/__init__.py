"""Parent selection: strategies behind one protocol, chosen per run by name."""

from service.selection.base import Candidate, SelectionStrategy, StepContext
from service.selection.group import GroupEvolution
from service.selection.hgm import Hgm
from service.selection.islands import Islands, Migration
from service.selection.map_elites import MapElites
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
    "GroupEvolution",
    "Hgm",
    "Islands",
    "MapElites",
    "Migration",
    "ScoreChildProp",
    "ScoreProp",
    "SelectionStrategy",
    "StepContext",
    "Uniform",
    "UnknownStrategyError",
    "known_strategies",
    "make_strategy",
]
