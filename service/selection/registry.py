"""Strategy names as a run config writes them -> strategy classes."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from service.selection.base import SelectionStrategy, StrategyBase
from service.selection.group import GroupEvolution
from service.selection.hgm import Hgm
from service.selection.islands import Islands
from service.selection.map_elites import MapElites
from service.selection.score import Best, ScoreChildProp, ScoreProp, Uniform


class UnknownStrategyError(ValueError):
    """The run config names a selection strategy that does not exist."""


STRATEGIES: Mapping[str, type[StrategyBase]] = MappingProxyType(
    {
        cls.name: cls
        for cls in (ScoreChildProp, ScoreProp, Best, Uniform, Hgm, Islands, MapElites, GroupEvolution)
    }
)


def known_strategies() -> list[str]:
    return sorted(STRATEGIES)


def make_strategy(name: str, params: Mapping[str, float] | None = None) -> SelectionStrategy:
    """The strategy `name` with `params`.

    Raises `UnknownStrategyError` (a `ValueError`) naming the strategy and the
    known ones, or pydantic's `ValidationError` naming a bad or unknown param.
    """
    cls = STRATEGIES.get(name)
    if cls is None:
        raise UnknownStrategyError(
            f"unknown selection strategy {name!r}; known: {', '.join(known_strategies())}"
        )
    return cls.from_params(params or {})
