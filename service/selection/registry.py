"""Strategy names as a run config writes them -> strategy classes.

The built-in strategies are registered here; another package adds its own with
`register_strategy` (before runs naming it are planned or driven, in every process that
plans or drives them), and a run config then names it like any other.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from service.selection.base import SelectionStrategy, StrategyBase
from service.selection.group import GroupEvolution
from service.selection.hgm import Hgm
from service.selection.hgm_paper import HgmPaper
from service.selection.islands import Islands
from service.selection.map_elites import MapElites
from service.selection.score import Best, ScoreChildProp, ScoreProp, Uniform


class UnknownStrategyError(ValueError):
    """The run config names a selection strategy that does not exist."""


_registered: dict[str, type[StrategyBase]] = {
    cls.name: cls
    for cls in (ScoreChildProp, ScoreProp, Best, Uniform, Hgm, HgmPaper, Islands, MapElites, GroupEvolution)
}
BUILT_IN = frozenset(_registered)
STRATEGIES: Mapping[str, type[StrategyBase]] = MappingProxyType(_registered)  # a read-only view


def register_strategy(cls: type[StrategyBase]) -> type[StrategyBase]:
    """Make `cls` known by its `name` (usable as a class decorator). Registering the same class
    again does nothing; a name another class holds is refused with a ValueError naming it."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise ValueError(f"{cls.__qualname__} needs a class attribute `name` (the name a run config uses)")
    held = _registered.get(name)
    if held is not None and held is not cls:
        raise ValueError(f"selection strategy {name!r} is already registered ({held.__qualname__})")
    _registered[name] = cls
    return cls


def unregister_strategy(name: str) -> None:
    """Forget a strategy registered with `register_strategy`; the built-in ones stay."""
    if name in BUILT_IN:
        raise ValueError(f"{name!r} is a built-in selection strategy")
    _registered.pop(name, None)


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
