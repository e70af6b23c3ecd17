"""The evaluation policies' decisions on hand-computed cases: fixed stages, and racing's bounds.

Racing reads one-sided Wilson bounds at z = 1.6448536 (confidence 0.95), z^2 = 2.7055435.
For r of n: centre = (r/n + z^2/2n) / (1 + z^2/n), half = z sqrt(p(1-p)/n + z^2/4n^2) / (1 + z^2/n).
  0/5:  high = (0.2705544 + 0.2705544) / 1.5411087                      = 0.351116
  5/5:  low  = 1 / 1.5411087                                            = 0.648886
  1/5:  centre 0.305334, half 1.6448536 * 0.2430134 / 1.5411087 = 0.259372: high 0.564706
  2/5:  centre 0.435113, half 1.6448536 * 0.2739628 / 1.5411087 = 0.292409: [0.142704, 0.727522]
  45/50: centre 0.879462, half 1.6448536 * 0.0455033 / 1.0541109 = 0.071005: low 0.808457
  40/50: centre 0.784594, half 1.6448536 * 0.0589114 / 1.0541109 = 0.091925: low 0.692669
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest
from pydantic import ValidationError

from contracts.config import EvaluationConfig, RacingConfig
from contracts.vocabulary import StageStop
from service.selection.evaluation import Counts, FixedStages, Need, StageOver, StageProgress
from service.selection.evaluation_registry import (
    UnknownEvaluationPolicyError,
    make_evaluation_policy,
)
from service.selection.racing import Racing, bounds, kth_best_low, one_sided_z

TASKS = tuple(f"t{i}" for i in range(10))


@dataclass
class Peers:
    """The rest of the run as a test states it; counts how often the policy asked."""

    parent_counts: Counts | None = None
    others: list[Counts] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)

    def parent(self) -> Counts | None:
        self.asked.append("parent")
        return self.parent_counts

    def admitted(self) -> Sequence[Counts]:
        self.asked.append("admitted")
        return self.others


def progress(
    results: str,
    *,
    threshold: float,
    tasks: tuple[str, ...] = TASKS,
    peers: Peers | None = None,
    trials: int = 1,
) -> StageProgress:
    """`results`: one character per slot in the stage's order, 1 resolved, 0 not, . not finished."""
    slots = [(task, trial) for task in tasks for trial in range(trials)]
    done = {slot: mark == "1" for slot, mark in zip(slots, results, strict=False) if mark != "."}
    return StageProgress(
        stage=0,
        tasks=tasks,
        trials=trials,
        threshold=threshold,
        last=False,
        done=done,
        peers=peers or Peers(),
    )


def racing(**settings: object) -> Racing:
    return Racing(RacingConfig.model_validate({"batch": 5, "top_k": None} | settings))


def over(decision: object) -> StageOver:
    assert isinstance(decision, StageOver), decision
    return decision


def test_one_sided_z_and_the_wilson_bounds_by_hand() -> None:
    z = one_sided_z(0.95)
    assert z == pytest.approx(1.6448536, abs=1e-6)
    assert bounds(Counts(0, 5), z)[1] == pytest.approx(0.351116, abs=1e-5)
    assert bounds(Counts(5, 5), z)[0] == pytest.approx(0.648886, abs=1e-5)
    assert bounds(Counts(1, 5), z)[1] == pytest.approx(0.564706, abs=1e-5)
    assert bounds(Counts(2, 5), z) == pytest.approx((0.142704, 0.727522), abs=1e-5)
    assert bounds(Counts(45, 50), z)[0] == pytest.approx(0.808457, abs=1e-5)
    assert bounds(Counts(40, 50), z)[0] == pytest.approx(0.692669, abs=1e-5)


def test_the_first_batch_is_asked_for_first() -> None:
    decision = racing().decide(progress("", threshold=0.4))
    assert decision == Need(tuple((t, 0) for t in TASKS[:5]))
    # Results of the batch still out: the same batch is needed, nothing is decided.
    assert racing().decide(progress("0000.", threshold=0.4)) == decision


def test_a_hopeless_agent_stops_after_the_first_batch() -> None:
    # 0/5: upper bound 0.351 < 0.4 though 5 of 10 would still reach it.
    decision = over(racing().decide(progress("00000", threshold=0.4)))
    assert (decision.stop, decision.passed, decision.tasks) == (StageStop.CANNOT_REACH_THRESHOLD, False, 5)
    assert (decision.resolved, decision.total) == (0, 5)
    assert decision.high == pytest.approx(0.351116, abs=1e-5)


def test_out_of_reach_for_certain_comes_before_the_bound() -> None:
    # 3/5 at 0.9: even 5 more resolved give 8/10 < 0.9.
    decision = over(racing().decide(progress("11100", threshold=0.9)))
    assert decision.stop == StageStop.CANNOT_REACH_THRESHOLD
    assert decision.detail == "the rest resolved would still be below 0.9"


def test_a_clear_pass_stops_early_on_the_lower_bound() -> None:
    # 5/5 at 0.6: 5 of 10 is not yet 0.6 for certain, but the lower bound 0.649 is above it.
    decision = over(racing().decide(progress("11111", threshold=0.6)))
    assert (decision.stop, decision.passed, decision.tasks) == (StageStop.CLEARLY_PASSES, True, 5)
    assert decision.low == pytest.approx(0.648886, abs=1e-5)


def test_an_undecided_agent_gets_the_next_batch() -> None:
    # 2/5 at 0.4: [0.143, 0.728] holds 0.4.
    assert racing().decide(progress("01010", threshold=0.4)) == Need(tuple((t, 0) for t in TASKS))


def test_only_whole_batches_are_read() -> None:
    # Batch 1 undecided (2/5), three of batch 2 in and all resolved: still waiting for batch 2.
    assert racing().decide(progress("01010111..", threshold=0.4)) == Need(tuple((t, 0) for t in TASKS))


def test_a_complete_stage_is_decided_by_its_threshold() -> None:
    passed = over(racing().decide(progress("0101001010", threshold=0.4)))
    assert (passed.stop, passed.passed, passed.resolved, passed.total) == (
        StageStop.STAGE_COMPLETE,
        True,
        4,
        10,
    )
    failed = over(racing().decide(progress("0101001000", threshold=0.4)))
    assert (failed.stop, failed.passed) == (StageStop.STAGE_COMPLETE, False)


def test_a_stage_without_threshold_is_never_passed_early() -> None:
    assert isinstance(racing().decide(progress("11111", threshold=0.0)), Need)


def test_an_agent_that_cannot_beat_its_parent_stops() -> None:
    # 1/5: upper bound 0.565 < the parent's (45/50) lower bound 0.808.
    peers = Peers(parent_counts=Counts(45, 50))
    decision = over(racing().decide(progress("10000", threshold=0.0, peers=peers)))
    assert (decision.stop, decision.passed) == (StageStop.CANNOT_BEAT_PARENT, False)
    # Without the rule it goes on, and the parent is not even asked.
    peers = Peers(parent_counts=Counts(45, 50))
    assert isinstance(racing(beat_parent=False).decide(progress("10000", threshold=0.0, peers=peers)), Need)
    assert "parent" not in peers.asked


def test_an_agent_below_the_top_k_stops() -> None:
    # The 3rd best lower bound is 40/50's 0.693 > 1/5's upper bound 0.565.
    peers = Peers(others=[Counts(45, 50), Counts(40, 50), Counts(44, 50), Counts(0, 0)])
    assert kth_best_low(peers.others, 3, one_sided_z(0.95)) == pytest.approx(0.692669, abs=1e-5)
    decision = over(racing(top_k=3).decide(progress("10000", threshold=0.0, peers=peers)))
    assert decision.stop == StageStop.BELOW_TOP_K
    # Fewer than k agents with results: no such rule yet.
    few = Peers(others=[Counts(45, 50), Counts(40, 50), Counts(0, 0)])
    assert isinstance(racing(top_k=3).decide(progress("10000", threshold=0.0, peers=few)), Need)


def test_trials_count_as_slots_of_a_task() -> None:
    # 2 tasks a batch, 2 trials each: the first batch is 4 slots; 0/4 at 0.5 cannot reach it.
    tasks = TASKS[:4]
    assert racing(batch=2).decide(progress("", threshold=0.5, tasks=tasks, trials=2)) == Need(
        (("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1))
    )
    decision = over(racing(batch=2).decide(progress("0000", threshold=0.5, tasks=tasks, trials=2)))
    assert (decision.stop, decision.tasks, decision.total) == (StageStop.CANNOT_REACH_THRESHOLD, 2, 4)


def test_fixed_stages_need_every_task_and_never_ask_the_run() -> None:
    peers = Peers()
    assert FixedStages().decide(progress("1111", threshold=0.4, peers=peers)) == Need(
        tuple((t, 0) for t in TASKS)
    )
    decision = over(FixedStages().decide(progress("1111000000", threshold=0.4, peers=peers)))
    assert (decision.passed, decision.resolved, decision.total, decision.stop) == (True, 4, 10, None)
    assert peers.asked == []


def test_the_registry_names_the_policies() -> None:
    assert isinstance(make_evaluation_policy(EvaluationConfig()), FixedStages)
    policy = make_evaluation_policy(EvaluationConfig(policy="racing", racing=RacingConfig(batch=3)))
    assert isinstance(policy, Racing) and policy.config.batch == 3
    with pytest.raises(
        UnknownEvaluationPolicyError, match="unknown evaluation policy 'bandit'; known: racing, stages"
    ):
        make_evaluation_policy(EvaluationConfig(policy="bandit"))


def test_racing_settings_need_the_racing_policy() -> None:
    with pytest.raises(ValidationError, match="only used with policy 'racing'"):
        EvaluationConfig(racing=RacingConfig())
    with pytest.raises(ValidationError, match="confidence"):
        RacingConfig.model_validate({"confidence": 1.0})
