"""Exact probabilities of islands, map_elites and group on hand-computed examples."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from pydantic import ValidationError

from service.selection import GroupEvolution, Islands, MapElites, Migration, StepContext, make_strategy
from service.selection.base import Candidate
from tests.selection.cases import cand

LN3 = 1.0986122886681098  # lambda = 2 ln 3, m = 0.5: scores 0, 0.5, 1 weigh 1/4, 1/2, 3/4 (DGM's sigmoid)


def placed(agent_id: str, score: float, children: int = 0, **extra: object) -> Candidate:
    return Candidate.model_validate(cand(agent_id, score, children).model_dump() | extra)


def step(number: int, *siblings: str) -> StepContext:
    return StepContext(number=number, siblings=siblings)


# The seed on every island; `a` on island 1; `b` and `c` on island 0, `c` migrated to island 1.
ISLANDED = [
    placed("s", 0.5),
    placed("a", 1.0, island=1),
    placed("b", 0.0, island=0),
    placed("c", 1.0, children=2, island=0, migrated_to=(1,)),
]


def test_islands_params_and_defaults() -> None:
    assert Islands() == Islands(islands=4, migration_interval=10, lambda_=10.0, m=0.5)
    strategy = make_strategy("islands", {"islands": 3.0, "migration_interval": 5, "lambda": 2.0})
    assert strategy == Islands(islands=3, migration_interval=5, lambda_=2.0, m=0.5)
    for bad in ({"islands": 0}, {"islands": 2.5}, {"migration_interval": 0}, {"rings": 2}):
        with pytest.raises(ValidationError):
            make_strategy("islands", bad)


def test_islands_draw_within_the_steps_island() -> None:
    strategy = Islands(islands=2, lambda_=2 * LN3)
    # Step 1 is island 1: s 1/2, a 3/4, c 3/4 / 3 (two children) = 1/4; b is not there.
    assert strategy.probabilities_for_step(ISLANDED, step(1)) == {
        "s": pytest.approx(1 / 3),
        "a": pytest.approx(1 / 2),
        "b": 0.0,
        "c": pytest.approx(1 / 6),
    }
    # Step 2 is island 0: s 1/2, b 1/4, c 1/4; a is not there.
    assert strategy.probabilities_for_step(ISLANDED, step(2)) == {
        "s": pytest.approx(1 / 2),
        "a": 0.0,
        "b": pytest.approx(1 / 4),
        "c": pytest.approx(1 / 4),
    }
    draws = Counter(strategy.select_for_step(ISLANDED, random.Random(n), step(2)) for n in range(4000))
    assert "a" not in draws and set(draws) == {"s", "b", "c"}


def test_islands_without_a_step_weigh_everyone_as_one_island() -> None:
    strategy = Islands(islands=2, lambda_=2 * LN3)
    # s 1/2, a 3/4, b 1/4, c 1/4: total 7/4.
    assert strategy.probabilities(ISLANDED) == {
        "s": pytest.approx(2 / 7),
        "a": pytest.approx(3 / 7),
        "b": pytest.approx(1 / 7),
        "c": pytest.approx(1 / 7),
    }


def test_an_island_nobody_is_on_draws_from_all() -> None:
    strategy = Islands(islands=3, lambda_=0.0)
    only_home = [placed("x", 0.5, island=0), placed("y", 0.5, island=0)]
    assert strategy.probabilities_for_step(only_home, step(1)) == {"x": 0.5, "y": 0.5}


def test_migration_moves_each_islands_best_along_the_ring() -> None:
    strategy = Islands(islands=2, migration_interval=2)
    assert strategy.migrations(ISLANDED, 1) == [] and strategy.migrations(ISLANDED, 3) == []
    # Island 0: s, b, c; its best c is on island 1 already. Island 1: s, a, c; a (fewer
    # children than c at the same score) moves to island 0.
    assert strategy.migrations(ISLANDED, 2) == [Migration(agent_id="a", source=1, target=0)]
    assert strategy.migrations(ISLANDED, 4) == strategy.migrations(ISLANDED, 2)
    three = Islands(islands=3, migration_interval=1)
    ring = [
        placed("s", 0.1),
        placed("x", 0.2, island=0),
        placed("y", 0.3, island=1),
        placed("z", 0.4, island=2),
    ]
    assert three.migrations(ring, 7) == [
        Migration(agent_id="x", source=0, target=1),
        Migration(agent_id="y", source=1, target=2),
        Migration(agent_id="z", source=2, target=0),
    ]
    assert Islands(islands=1, migration_interval=1).migrations(ring, 1) == []


def test_map_elites_clusters_by_task_id_order() -> None:
    strategy = MapElites(bins=2)
    assert strategy.clusters(["t5", "t1", "t3", "t2", "t4"]) == [["t1", "t2", "t3"], ["t4", "t5"]]
    assert MapElites(bins=3).clusters(["d", "c", "b", "a"]) == [["a", "b"], ["c"], ["d"]]
    assert MapElites(bins=10).clusters(["b", "a"]) == [["a"], ["b"]]


def test_map_elites_descriptor_bins_each_clusters_solved_fraction() -> None:
    tasks = ["t1", "t2", "t3", "t4", "t5"]
    # Cluster t1-t3: (1 + 0 + 0) / 3 = 1/3 -> level 1 of 3; t4-t5: (1 + 1/2) / 2 = 3/4 -> level 2.
    results = {"t1": (1, 1), "t2": (0, 1), "t4": (2, 2), "t5": (1, 2)}
    assert MapElites(bins=2, levels=3).descriptor(tasks, results) == "1-2"
    # Two levels: 1/3 is below one half, 3/4 above; exactly one half is the upper level.
    assert MapElites(bins=2, levels=2).descriptor(tasks, results) == "0-1"
    assert MapElites(bins=1, levels=2).descriptor(["a", "b"], {"a": (1, 1)}) == "1"
    assert MapElites(bins=5, levels=4).descriptor(tasks, {t: (1, 1) for t in tasks}) == "3-3-3-3-3"
    assert MapElites(bins=2, levels=3).descriptor(tasks, {}) == "0-0"


def test_map_elites_draws_uniformly_among_niche_elites() -> None:
    candidates = [
        placed("a", 0.5, children=1, niche="0-1"),
        placed("b", 0.5, children=0, niche="0-1"),  # beats a on children
        placed("c", 0.9, niche="1-1"),
        placed("e", 0.2, niche="1-0"),
        placed("d", 0.2, niche="1-0"),  # ties e on score and children, wins on id
        placed("f", 0.1, niche="1-1"),
    ]
    strategy = MapElites()
    assert {k: v.agent_id for k, v in strategy.elites(candidates).items()} == {
        "0-1": "b",
        "1-1": "c",
        "1-0": "d",
    }
    third = pytest.approx(1 / 3)
    assert strategy.probabilities(candidates) == {
        "a": 0.0,
        "b": third,
        "c": third,
        "d": third,
        "e": 0.0,
        "f": 0.0,
    }
    assert strategy.probabilities_for_step(candidates, step(9)) == strategy.probabilities(candidates)


def test_group_steps_and_params() -> None:
    strategy = make_strategy("group", {"group_size": 2, "lambda": 2 * LN3})
    assert isinstance(strategy, GroupEvolution)
    assert [strategy.group_of_step(n) for n in range(1, 6)] == [1, 1, 2, 2, 3]
    assert list(strategy.steps_of_group(2)) == [3, 4]
    with pytest.raises(ValidationError):
        make_strategy("group", {"group_size": 0})
    with pytest.raises(ValidationError):
        make_strategy("group", {"experience_chars": 10})


GROUPED = [placed("a", 0.0), placed("b", 0.5), placed("c", 1.0, children=2)]  # weights 1/4, 1/2, 1/4


def test_group_draws_without_replacement_within_a_group() -> None:
    strategy = GroupEvolution(group_size=2, lambda_=2 * LN3)
    assert strategy.probabilities_for_step(GROUPED, step(1)) == {
        "a": pytest.approx(1 / 4),
        "b": pytest.approx(1 / 2),
        "c": pytest.approx(1 / 4),
    }
    # b is the group's first parent: the second is a or c, renormalised.
    assert strategy.probabilities_for_step(GROUPED, step(2, "b")) == {
        "a": pytest.approx(1 / 2),
        "b": 0.0,
        "c": pytest.approx(1 / 2),
    }
    # Every candidate taken: all may be drawn again.
    assert strategy.probabilities_for_step(GROUPED, step(3, "a", "b", "c")) == strategy.probabilities(GROUPED)


def test_a_groups_parents_are_a_draw_without_replacement() -> None:
    strategy = GroupEvolution(group_size=2, lambda_=2 * LN3)
    # P({a, b}) = 1/4 * (1/2)/(3/4) + 1/2 * (1/4)/(1/2) = 5/12; {b, c} the same; {a, c} 1/6.
    exact = {("a", "b"): 5 / 12, ("b", "c"): 5 / 12, ("a", "c"): 1 / 6}
    trials = 12_000
    counts: Counter[tuple[str, ...]] = Counter()
    for n in range(trials):
        rng = random.Random(f"g:{n}")
        first = strategy.select_for_step(GROUPED, rng, step(1))
        second = strategy.select_for_step(GROUPED, rng, step(2, first))
        assert first != second
        counts[tuple(sorted((first, second)))] += 1
    for pair, p in exact.items():
        assert counts[pair] / trials == pytest.approx(p, abs=0.02), pair
