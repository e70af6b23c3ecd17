"""Building strategies from a run config's `selection` block."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from contracts.config import SelectionConfig
from service.selection import (
    Best,
    Hgm,
    ScoreChildProp,
    ScoreProp,
    Uniform,
    UnknownStrategyError,
    known_strategies,
    make_strategy,
)


def test_known_strategies() -> None:
    assert known_strategies() == [
        "best",
        "group",
        "hgm",
        "hgm-paper",
        "islands",
        "map_elites",
        "random",
        "score_child_prop",
        "score_prop",
    ]


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("score_child_prop", ScoreChildProp),
        ("score_prop", ScoreProp),
        ("best", Best),
        ("random", Uniform),
        ("hgm", Hgm),
    ],
)
def test_make_strategy_by_name(name: str, cls: type) -> None:
    strategy = make_strategy(name, {})
    assert type(strategy) is cls
    assert strategy.name == name


def test_params_default_to_none() -> None:
    assert make_strategy("hgm") == Hgm(alpha=1.0, beta=1.0)


def test_unknown_strategy_names_it_and_lists_the_known() -> None:
    with pytest.raises(UnknownStrategyError) as caught:
        make_strategy("score_childprop", {})
    assert isinstance(caught.value, ValueError)
    assert str(caught.value) == (
        "unknown selection strategy 'score_childprop'; known: best, group, hgm, hgm-paper, islands,"
        " map_elites, random, score_child_prop, score_prop"
    )


def test_lambda_is_accepted_as_written_and_by_field_name() -> None:
    written = make_strategy("score_child_prop", {"lambda": 3.0, "m": 0.4})
    by_field = make_strategy("score_child_prop", {"lambda_": 3.0, "m": 0.4})
    assert written == by_field == ScoreChildProp(lambda_=3.0, m=0.4)


def _only_error(name: str, params: dict[str, float]) -> tuple[tuple[str | int, ...], str]:
    with pytest.raises(ValidationError) as caught:
        make_strategy(name, params)
    errors = caught.value.errors()
    assert len(errors) == 1
    return errors[0]["loc"], errors[0]["type"]


@pytest.mark.parametrize(
    ("name", "params", "loc", "kind"),
    [
        ("score_child_prop", {"lamda": 5.0}, ("lamda",), "extra_forbidden"),
        ("score_child_prop", {"lambda": -1.0}, ("lambda",), "greater_than_equal"),
        ("score_child_prop", {"m": 1.5}, ("m",), "less_than_equal"),
        ("score_child_prop", {"lambda": float("nan")}, ("lambda",), "finite_number"),
        ("hgm", {"alpha": 0.0}, ("alpha",), "greater_than_equal"),
        ("hgm", {"beta": -2.0}, ("beta",), "greater_than_equal"),
        ("hgm", {"alpha": 1e308}, ("alpha",), "less_than_equal"),  # betavariate would never return
        ("hgm", {"beta": 1e7}, ("beta",), "less_than_equal"),
        ("hgm", {"beta": 1e-300}, ("beta",), "greater_than_equal"),  # its variance underflows to 0
        ("hgm", {"temperature": 1.0}, ("temperature",), "extra_forbidden"),
        ("best", {"k": 2.0}, ("k",), "extra_forbidden"),
        ("random", {"seed": 1.0}, ("seed",), "extra_forbidden"),
        ("score_prop", {"lambda": 1.0}, ("lambda",), "extra_forbidden"),
    ],
)
def test_bad_params_name_the_field(
    name: str, params: dict[str, float], loc: tuple[str, ...], kind: str
) -> None:
    assert _only_error(name, params) == (loc, kind)


def test_bad_params_message_names_the_strategy_class() -> None:
    with pytest.raises(ValidationError, match=r"ScoreChildProp\nlamda\n  Extra inputs"):
        make_strategy("score_child_prop", {"lamda": 5.0})


def test_strategies_are_immutable() -> None:
    strategy = make_strategy("hgm", {"alpha": 2.0})
    with pytest.raises(ValidationError):
        strategy.alpha = 3.0  # type: ignore[attr-defined]


def test_default_run_config_selection_builds() -> None:
    config = SelectionConfig()
    strategy = make_strategy(config.strategy, config.params)
    assert strategy == ScoreChildProp(lambda_=10.0, m=0.5)


def test_run_config_params_reach_the_strategy() -> None:
    config = SelectionConfig.model_validate(
        {"strategy": "score_child_prop", "params": {"lambda": 4, "m": 0.6}}
    )
    assert make_strategy(config.strategy, config.params) == ScoreChildProp(lambda_=4.0, m=0.6)
