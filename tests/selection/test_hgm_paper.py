"""`hgm-paper` against the rules of HGM's own loop (metauto-ai/HGM `hgm.py` 360-460, `tree.py`).

The strategy is driven here over an in-memory run (members, steps and evaluations as the
ledger shows them), one move at a time, as HGM's workers take turns; the driver's own tests
(tests/service/test_hgm_paper_driver.py) run it on SQLite and PostgreSQL.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic import ValidationError

from service.selection import Candidate, Expand, HgmPaper, Measure, RunScope, StepContext, Wait, make_strategy
from service.selection.ledger import AgentTally, EvaluationView, MemberView, StepView
from service.selection.thompson import beta_max_probabilities

SEED = "s" * 40
POOL = tuple(f"task-{i:02d}" for i in range(30))


@dataclass(frozen=True)
class Stage:
    task_ids: tuple[str, ...]
    threshold: float = 0.0


@dataclass(frozen=True)
class Plan:
    stages: tuple[Stage, ...] = (Stage(POOL),)
    rng_seed: int = 0
    parallelism: int = 1
    trials: int = 1


@dataclass
class Books:
    """A run as the ledger shows it: the seed scored on every task, its children, their results."""

    member_rows: list[MemberView] = field(default_factory=list)
    step_rows: list[StepView] = field(default_factory=list)
    rows: list[EvaluationView] = field(default_factory=list)

    def members(self) -> list[MemberView]:
        return sorted(self.member_rows, key=lambda m: m.agent_id)

    def steps(self) -> list[StepView]:
        return list(self.step_rows)

    @property
    def run_id(self) -> str:
        return "run"

    @property
    def seed_agent_id(self) -> str:
        return SEED

    @property
    def epoch(self) -> int:
        return 0

    def evaluations(self, agent_ids: Sequence[str]) -> list[EvaluationView]:
        return [row for row in self.rows if row.agent_id in agent_ids]

    def tallies(self) -> dict[str, AgentTally]:
        counted: dict[str, AgentTally] = {}
        for agent in {row.agent_id for row in self.rows}:
            rows = [row for row in self.rows if row.agent_id == agent and row.purpose != "heldout"]
            counted[agent] = AgentTally(
                evaluations=len(rows),
                passes=sum(1 for row in rows if row.done and row.resolved),
                fails=sum(1 for row in rows if row.done and not row.resolved),
                tasks=len({row.task_id for row in rows}),
                pending_tasks=len({row.task_id for row in rows if not row.done}),
            )
        return counted

    def add_member(self, agent_id: str, parent_id: str | None, step: int) -> None:
        member = MemberView(agent_id, parent_id, True, step, None, 0, None, None)
        self.member_rows.append(member)

    def add_result(self, agent_id: str, task_id: str, resolved: bool | None) -> None:
        done = resolved is not None
        self.rows.append(EvaluationView(agent_id, task_id, 0, "selection", done, resolved))

    def children(self) -> list[str]:
        return [m.agent_id for m in self.member_rows if m.agent_id != SEED]

    def own(self, agent_id: str) -> list[bool]:
        return [bool(r.resolved) for r in self.rows if r.agent_id == agent_id and r.done]

    # The rest of RunLedger, unused by the strategy.
    def events(self, kind: str) -> list[dict[str, Any]]:
        return []

    def record(self, kind: str, payload: Mapping[str, Any]) -> None:
        raise AssertionError("hgm-paper keeps no books of its own")

    def set_island(self, agent_id: str, island: int) -> None: ...

    def set_niche(self, agent_id: str, niche: str) -> None: ...

    def set_group(self, step_number: int, group_id: str) -> None: ...

    def update_experience(self, limit_chars: int) -> None: ...

    def experience(self) -> str | None:
        return None


def seeded(solved: int = 15) -> Books:
    books = Books()
    books.add_member(SEED, None, 0)
    for index, task in enumerate(POOL):
        books.add_result(SEED, task, index < solved)
    return books


def scope(books: Books, plan: Plan) -> RunScope:
    return RunScope(ledger=books, plan=plan, steps_opened=len(books.step_rows))  # type: ignore[arg-type]


def child_id(number: int) -> str:
    return f"{number:040d}"


def play(
    strategy: HgmPaper, books: Books, plan: Plan, moves: int, solves: float = 0.5, seed: int = 0
) -> list[str]:
    """One worker taking turns: each move is decided, then done at once (a child is made and
    admitted unmeasured; a task is run and its result recorded). The moves, as letters."""
    rng = random.Random(seed)
    letters = []
    for _ in range(moves):
        number = len(books.step_rows) + 1
        move = strategy.next_move(scope(books, plan), number, [])
        if isinstance(move, Expand):
            books.step_rows.append(StepView(number, SEED, False, None, "improve", None))
            books.add_member(child_id(number), SEED, number)
            letters.append("E")
        elif isinstance(move, Measure):
            assert len(move.task_ids) == 1
            books.add_result(move.agent_id, move.task_ids[0], rng.random() < solves)
            letters.append("M")
        else:
            letters.append("W")
    return letters


def child_evaluations(books: Books) -> int:
    return sum(1 for row in books.rows if row.agent_id != SEED)


def test_with_one_worker_the_moves_follow_hgms_inequality() -> None:
    # hgm.py:413: expand while n_task_evals ** 0.6 >= nodes (children, pending ones included);
    # first min(5, int(max_workers ** 0.6)) = 1 child. Worked by hand from that line:
    # n=0: 1 child; n=1: 1 >= 1 expands; n=4: 2.30 >= 2; n=7: 3.21 >= 3; n=11: 4.21 >= 4.
    books = seeded()
    moves = "".join(play(HgmPaper(), books, Plan(), 16))
    assert moves == "EMEMMMEMMMEMMMME"


@pytest.mark.parametrize("alpha", [0.6, 0.4, 0.8])
def test_after_n_evaluations_the_tree_has_floor_n_to_the_alpha_children_plus_the_first(alpha: float) -> None:
    books = seeded()
    strategy = HgmPaper(alpha=alpha)
    # Up to 240 evaluations, where no child has run out of unseen tasks yet (30 each).
    while child_evaluations(books) < 240:
        play(strategy, books, Plan(), 1)
        n = child_evaluations(books)
        # Checked whenever the next move would be a measurement: expansions due are all made.
        upcoming = strategy.next_move(scope(books, Plan()), len(books.step_rows) + 1, [])
        if n >= 1 and isinstance(upcoming, Measure):
            assert len(books.children()) == math.floor(n**alpha) + 1, n


def test_a_wide_run_makes_its_first_children_before_measuring_anything() -> None:
    # hgm.py:464: min(5, int(20 ** 0.6)) = 5 expansions, all finished before the sampling loop.
    books, plan = seeded(), Plan(parallelism=20)
    strategy = HgmPaper()
    chosen: list[str] = []
    moves = []
    for number in range(1, 8):
        move = strategy.next_move(scope(books, plan), number, chosen)
        moves.append(type(move).__name__)
        if isinstance(move, Expand):
            chosen.append(SEED)
        else:
            break
    assert moves == ["Expand"] * 5 + ["Wait"]
    # The next tick, while one of the five is still being made, nothing is measured either.
    for number in range(1, 6):
        books.step_rows.append(StepView(number, SEED, number == 3, None, "improve", None))
        if number != 3:
            books.add_member(child_id(number), SEED, number)
    assert isinstance(strategy.next_move(scope(books, plan), 6, []), Wait)
    assert strategy.steps_allowed(scope(books, plan)) == 19


def test_a_measurement_is_one_task_the_agent_has_not_seen() -> None:
    books = seeded()
    strategy = HgmPaper()
    play(strategy, books, Plan(), 1)  # the first child
    child = books.children()[0]
    seen: set[str] = set()
    for _ in range(3 * len(POOL)):
        if seen == set(POOL):
            break
        before = child_evaluations(books)
        move = strategy.next_move(scope(books, Plan()), len(books.step_rows) + 1, [])
        if isinstance(move, Expand):  # expansions are due now and then; make none here
            books.step_rows.append(StepView(len(books.step_rows) + 1, SEED, True, None, "improve", None))
            continue
        assert isinstance(move, Measure)
        assert move.agent_id == child and len(move.task_ids) == 1
        assert move.task_ids[0] not in seen and move.task_ids[0] in POOL
        seen.add(move.task_ids[0])
        books.add_result(child, move.task_ids[0], True)
        assert child_evaluations(books) == before + 1
    assert seen == set(POOL)
    # Every agent has seen every task: nothing is left to measure, so the worker expands.
    assert isinstance(strategy.next_move(scope(books, Plan()), len(books.step_rows) + 1, []), Expand)


def test_the_task_is_drawn_at_random_or_taken_in_order() -> None:
    books = seeded()
    play(HgmPaper(), books, Plan(), 1)
    picks = set()
    for rng_seed in range(40):
        move = HgmPaper().next_move(scope(books, Plan(rng_seed=rng_seed)), 2, [])
        assert isinstance(move, Measure)
        picks.add(move.task_ids[0])
    assert len(picks) > 10  # eval_random_level 1.0 (HGM's config.yaml): any unseen task
    ordered = HgmPaper(eval_random_level=0.0).next_move(scope(books, Plan(rng_seed=7)), 2, [])
    assert isinstance(ordered, Measure) and ordered.task_ids == (POOL[0],)


def test_the_agent_measured_is_a_thompson_draw_on_its_own_results() -> None:
    # hgm.py:360-377 and 428-435: Beta(1 + passes, 1 + fails) of each node's own results; argmax.
    books = seeded()
    strong, weak, fresh = child_id(1), child_id(2), child_id(3)
    for number, agent in enumerate((strong, weak, fresh), start=1):
        books.step_rows.append(StepView(number, SEED, False, None, "improve", None))
        books.add_member(agent, SEED, number)
    for index, task in enumerate(POOL[:10]):
        books.add_result(strong, task, index < 8)
        books.add_result(weak, task, index < 2)
    strategy = HgmPaper(alpha=0.1)  # 20 ** 0.1 < 3 children: no expansion is due
    draws = 3000
    counts = {strong: 0, weak: 0, fresh: 0}
    for rng_seed in range(draws):
        move = strategy.next_move(scope(books, Plan(rng_seed=rng_seed)), 4, [])
        assert isinstance(move, Measure)
        counts[move.agent_id] += 1
    # The seed has seen every task, so it is never measured; the others as often as their
    # Beta posteriors win, computed exactly.
    exact = beta_max_probabilities([(9.0, 3.0), (3.0, 9.0), (1.0, 1.0)])
    for agent, chance in zip((strong, weak, fresh), exact, strict=True):
        assert abs(counts[agent] / draws - chance) < 4 * math.sqrt(chance * (1 - chance) / draws) + 0.005
    assert counts[strong] > counts[fresh] > counts[weak]


def test_pending_results_do_not_count_but_their_tasks_are_seen() -> None:
    books = seeded()
    play(HgmPaper(), books, Plan(), 1)
    child, done = books.children()[0], child_id(2)
    books.step_rows.append(StepView(2, SEED, False, None, "improve", None))
    books.add_member(done, SEED, 2)
    for task in POOL:
        books.add_result(done, task, True)  # seen everything: not measurable
    for task in POOL[:-1]:
        books.add_result(child, task, None)  # sent, not answered
    move = HgmPaper(alpha=0.1).next_move(scope(books, Plan(parallelism=40)), 3, [])
    assert move == Measure(agent_id=child, task_ids=(POOL[-1],))
    assert HgmPaper().steps_allowed(scope(books, Plan(parallelism=40))) == 40 - (len(POOL) - 1)


def test_parents_are_drawn_by_their_clades_results() -> None:
    # hgm.py:383-394 and tree.py:49-54: nodes with a positive mean of their own; each draws from
    # Beta(1 + passes, 1 + fails) of its own and its descendants' results pooled; argmax.
    strategy = HgmPaper()
    good_clade = Candidate(agent_id="a" * 40, score=0.2, children=3, clade_resolved=30, clade_attempted=40)
    poor_clade = Candidate(agent_id="b" * 40, score=0.9, children=3, clade_resolved=10, clade_attempted=40)
    chances = strategy.probabilities([good_clade, poor_clade])
    assert chances == pytest.approx(
        dict(zip(("a" * 40, "b" * 40), beta_max_probabilities([(31.0, 11.0), (11.0, 31.0)]), strict=True))
    )
    assert chances["a" * 40] > 0.99  # the clade decides, not the agent's own score
    drawn = [
        strategy.select_for_step([good_clade, poor_clade], random.Random(i), StepContext(number=1))
        for i in range(200)
    ]
    assert drawn.count("a" * 40) >= 195


def test_an_agent_with_no_pass_of_its_own_is_no_parent() -> None:
    books = seeded()
    play(HgmPaper(), books, Plan(), 1)
    child = books.children()[0]
    books.add_result(child, POOL[0], False)
    pool = [
        Candidate(agent_id=SEED, score=0.5, children=1, clade_resolved=15, clade_attempted=31),
        Candidate(agent_id=child, score=0.0, children=0, clade_resolved=0, clade_attempted=1),
    ]
    assert [c.agent_id for c in HgmPaper().prepare_draw(scope(books, Plan()), pool, 2)] == [SEED]
    books.add_result(child, POOL[1], True)
    assert len(HgmPaper().prepare_draw(scope(books, Plan()), pool, 2)) == 2


def test_nothing_moves_until_the_seed_is_admitted_and_children_enter_unmeasured() -> None:
    books = Books()
    assert isinstance(HgmPaper().next_move(scope(books, Plan()), 1, []), Wait)
    books = seeded()
    assert HgmPaper().entry_stages(scope(books, Plan()), SEED) is None  # the run's stages
    assert HgmPaper().entry_stages(scope(books, Plan()), child_id(1)) == ()


def test_the_same_run_decides_the_same_moves() -> None:
    first, again = seeded(), seeded()
    assert play(HgmPaper(), first, Plan(rng_seed=5), 120, seed=1) == play(
        HgmPaper(), again, Plan(rng_seed=5), 120, seed=1
    )
    assert first.rows == again.rows
    other = seeded()
    play(HgmPaper(), other, Plan(rng_seed=6), 120, seed=1)
    assert other.rows != first.rows


def test_params_and_budget() -> None:
    strategy = make_strategy("hgm-paper", {})
    assert strategy == HgmPaper(alpha=0.6, eval_random_level=1.0)
    assert strategy.budget_defaults() == {"max_evaluations": 800, "max_children": 800}
    with pytest.raises(ValidationError, match="alpha"):
        make_strategy("hgm-paper", {"alpha": 0.0})
    with pytest.raises(ValidationError, match="cool_down"):
        make_strategy("hgm-paper", {"cool_down": 1.0})
