"""The built-in landscapes and landscapes from YAML files."""

from __future__ import annotations

import random
import statistics
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from service.simulation.landscape import LANDSCAPES, Landscape, Mutation, TaskKind
from service.simulation.landscape_file import LandscapeFileError, load_landscape, resolve_landscape
from service.simulation.presets import PRESETS
from service.simulation.runner import simulate


def test_six_landscapes_are_built_in_and_each_seed_draws_the_same_landscape() -> None:
    assert list(LANDSCAPES) == [
        "default",
        "clusters",
        "dgm-start",
        "medium-gains",
        "deceptive",
        "noisy-grader",
    ]
    for config in LANDSCAPES.values():
        first, again, other = Landscape(config, 5), Landscape(config, 5), Landscape(config, 6)
        assert (first.difficulty, first.kind, first.cost) == (again.difficulty, again.kind, again.cost)
        assert first.difficulty != other.difficulty
        assert abs(first.score(first.seed_logits()) - config.seed_score) < 1e-9


def test_dgm_start_starts_where_dgm_started() -> None:
    assert LANDSCAPES["dgm-start"].seed_score == 0.2


def test_tasks_cost_different_amounts_and_the_worker_reports_each() -> None:
    small = replace(LANDSCAPES["default"], tasks=80)
    landscape = Landscape(small, 3)
    dollars = [c.usd for c in landscape.cost]
    assert max(dollars) > 3 * min(dollars)  # a log-normal spread, not one price
    assert statistics.median(dollars) == pytest.approx(small.cost_usd, rel=0.5)
    result = simulate(PRESETS["dgm"], small, seed=3, budget=200)
    assert result.cost_in_database == pytest.approx(result.cost_usd)
    assert 200 * min(dollars) < result.cost_usd < 200 * max(dollars)
    assert result.cost_usd != pytest.approx(200 * small.cost_usd, rel=1e-3)  # not one price per task


def test_a_noisy_grader_flips_verdicts_and_has_tasks_no_agent_passes() -> None:
    config = LANDSCAPES["noisy-grader"]
    landscape = Landscape(config, 0)
    assert landscape.kind.count(TaskKind.FLAKY) == round(config.flaky * config.tasks)
    assert landscape.kind.count(TaskKind.IMPOSSIBLE) == round(config.impossible * config.tasks)
    strong = [10.0] * config.tasks  # an agent that solves every task it can
    flaky = landscape.kind.index(TaskKind.FLAKY)
    impossible = landscape.kind.index(TaskKind.IMPOSSIBLE)
    assert landscape.chance(strong, flaky) == config.flaky_chance
    assert landscape.chance(strong, impossible) == 0.0
    # The true score counts flaky tasks at their chance and impossible ones at 0.
    expected = 1 - config.flaky - config.impossible + config.flaky * config.flaky_chance
    assert landscape.score(strong) == pytest.approx(expected, abs=1e-3)


def test_on_the_deceptive_landscape_gains_come_after_a_stepping_stone() -> None:
    landscape = Landscape(LANDSCAPES["deceptive"], 0)
    rng = random.Random(3)
    plain = [landscape.draw(rng) for _ in range(20_000)]
    unlocked = [landscape.draw(rng, unlocked=True) for _ in range(20_000)]
    share = lambda draws: sum(d.kind is Mutation.LARGE_GAIN for d in draws) / len(draws)  # noqa: E731
    assert share(plain) < 0.01 < 0.1 < share(unlocked)
    steps = [d.shift for d in plain if d.kind is Mutation.STEPPING]
    assert steps and statistics.fmean(steps) < 0  # the stepping stone itself scores worse


def test_a_landscape_file_sets_its_parameters_over_a_base(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text("base: clusters\ntasks: 120\nseed_score: 0.3\nflaky: 0.1\ncost_usd: 2\nseconds: 6e2\n")
    config = load_landscape(path)
    assert config == replace(
        LANDSCAPES["clusters"], name="mine", tasks=120, seed_score=0.3, flaky=0.1, cost_usd=2.0, seconds=600.0
    )
    assert resolve_landscape(str(path)) == config
    assert resolve_landscape("deceptive") is LANDSCAPES["deceptive"]
    a, b = Landscape(config, 1), Landscape(config, 1)
    assert a.difficulty == b.difficulty and a.kind == b.kind


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("tasks: 100\nlarge_gains: 0.2\n", "unknown key 'large_gains'"),
        ("tasks: many\n", "tasks: expected a whole number, got 'many'"),
        ("tasks: 2.5\n", "tasks: expected a whole number"),
        ("harmful: true\n", "harmful: expected a number, got True"),
        ("base: swe-bench\n", "base: unknown landscape 'swe-bench'"),
        ("flaky: 1.5\n", "flaky must lie between 0 and 1"),
        ("noop: 0.9\nharmful: 0.5\n", "mutation probabilities"),
        ("- tasks\n", "expected a mapping"),
        ("tasks: [1\n", "not valid YAML"),
        ("a: &x 1\nb: *x\n", "anchors"),
        ("tasks: 1000000000\n", "tasks must lie between 1 and 20,000, got 1,000,000,000"),
        ("effect_sd: .nan\n", "effect_sd must be a finite number, got nan"),
        ("cost_usd: .inf\n", "cost_usd must be a finite number"),
        ("large_mean: 1e308\n", "large_mean must lie within +/-20"),
        ("seconds: 1e6\n", "seconds must be at most 86400"),
        # A name becomes the plot's file name and a table cell.
        ("name: ../../elsewhere\n", "name '../../elsewhere': 1-64 letters, digits"),
        ("name: 'a|b'\n", "name 'a|b': 1-64 letters"),
        ("base: [default]\n", "base: unknown landscape ['default']"),
        ("base: {a: 1}\n", "base: unknown landscape"),
        # Every edit a no-op or invalid: no child is ever evaluated, a run never ends.
        ("invalid: 1\nnoop: 0\nharmful: 0\nlarge_gain: 0\n", "noop + invalid must be under 1"),
        ("noop: 1\ninvalid: 0\nharmful: 0\nlarge_gain: 0\n", "noop + invalid must be under 1"),
        ("usd_per_mtok: 1e-300\n", "usd_per_mtok must be at least 1e-06"),
        # A seed score the task kinds cannot give: 160 of 200 tasks resolve for no agent.
        ("impossible: 0.8\nseed_score: 0.9\n", "seed_score must lie strictly between 0 and 0.2 here"),
        ("tasks: 60\nflaky: 0.5\nimpossible: 0.495\n", "flaky and impossible take all 60 tasks"),
    ],
)
def test_a_bad_landscape_file_is_refused_naming_the_file_and_the_key(
    tmp_path: Path, text: str, says: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(LandscapeFileError) as refused:
        load_landscape(path)
    assert str(refused.value).startswith(f"{path}: ")
    assert says in str(refused.value)


def test_a_file_may_not_give_a_built_in_landscapes_name_to_other_numbers(tmp_path: Path) -> None:
    other = tmp_path / "default.yaml"
    other.write_text("seed_score: 0.3\n")
    with pytest.raises(LandscapeFileError, match="name 'default' is a built-in landscape's"):
        load_landscape(other)
    named = tmp_path / "mine.yaml"
    named.write_text("name: clusters\ntasks: 100\n")
    with pytest.raises(LandscapeFileError, match="name 'clusters' is a built-in"):
        load_landscape(named)
    # The same numbers under the same name are the built-in itself.
    same = tmp_path / "deceptive.yaml"
    same.write_text("base: deceptive\n")
    assert load_landscape(same) == LANDSCAPES["deceptive"]
    renamed = tmp_path / "default.yaml"
    renamed.write_text("name: lower-seed\nseed_score: 0.3\n")
    assert load_landscape(renamed).name == "lower-seed"


def test_a_file_whose_stem_is_no_landscape_name_must_give_one(tmp_path: Path) -> None:
    spaced = tmp_path / "my landscape.yaml"
    spaced.write_text("tasks: 100\n")
    with pytest.raises(LandscapeFileError, match="stem 'my landscape' is not a landscape name"):
        load_landscape(spaced)
    spaced.write_text("name: my-landscape\ntasks: 100\n")
    assert load_landscape(spaced).name == "my-landscape"


def test_an_unknown_landscape_name_is_refused() -> None:
    with pytest.raises(LandscapeFileError, match="unknown landscape 'nowhere'"):
        resolve_landscape("nowhere")
    with pytest.raises(LandscapeFileError, match="cannot be read"):
        resolve_landscape("nowhere.yaml")


def test_a_half_budget_preset_ends_at_half_and_shares_its_seed_with_its_twin() -> None:
    small = replace(LANDSCAPES["default"], tasks=80)
    full = simulate(PRESETS["dgm"], small, seed=2, budget=400)
    half = simulate(PRESETS["dgm/2"], small, seed=2, budget=400)
    assert half.evaluations == half.done_in_database == 200
    assert half.budget == 400  # compared over the full budget, flat after its end
    # Common random numbers: the same seed gives the same landscape, tasks and draws, so the
    # half run is the full run cut at 200.
    early = [s for s in full.samples if s.evaluations < 180]
    assert len(early) > 3
    assert half.samples[: len(early)] == early


def _refused_before_anything_runs(tmp_path: Path, name: str, text: str, *extra: str) -> str:
    """What `clade sim` says refusing the landscape file `name` holding `text` (exit code 2,
    its --out folder never made)."""
    path = tmp_path / name
    path.write_text(text)
    out = tmp_path / "never"
    args = ["sim", "--landscape", str(path), "--preset", "dgm", "--seeds", "1", "--out", str(out), *extra]
    refused = CliRunner().invoke(app, args, env={"COLUMNS": "1000"})
    assert refused.exit_code == 2
    assert not out.exists()
    return refused.output


def test_a_landscape_too_small_for_a_preset_is_refused_before_anything_runs(tmp_path: Path) -> None:
    said = _refused_before_anything_runs(tmp_path, "tiny.yaml", "tasks: 40\n")
    assert "landscape 'tiny' has 40 tasks, too few for dgm (needs 60)" in said


def test_a_landscape_whose_agents_would_not_fit_in_memory_is_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    # 20,000 tasks a child and up to 200,000 children a run, two runs side by side: about 60 GiB.
    said = _refused_before_anything_runs(
        tmp_path, "vast.yaml", "tasks: 20000\n", "--budget", "100000", "--jobs", "2"
    )
    assert "landscape 'vast': 20,000 tasks at --budget 100,000 may keep" in said
    assert "give fewer tasks, a smaller --budget or fewer --jobs" in said


def test_a_landscape_path_that_is_not_a_regular_file_is_refused_unread(tmp_path: Path) -> None:
    with pytest.raises(LandscapeFileError, match="not a regular file"):
        load_landscape(Path("/dev/zero"))  # a device reads for ever
    with pytest.raises(LandscapeFileError, match="not a regular file"):
        load_landscape(tmp_path)
    huge = tmp_path / "huge.yaml"
    huge.write_text("# " + "x" * 500_000 + "\n")
    with pytest.raises(LandscapeFileError, match="larger than 400,000 bytes"):
        load_landscape(huge)


def test_task_costs_stay_within_what_a_worker_may_report_however_wide_the_spread() -> None:
    wide = replace(LANDSCAPES["default"], name="wide", cost_usd=10_000.0, cost_sd=20.0, seconds=86_400.0)
    costs = Landscape(wide, seed=0).cost
    assert max(c.usd for c in costs) == 10_000.0  # half the draws land above the median: capped
    assert max(c.seconds for c in costs) == 86_400.0
    assert max(c.tokens for c in costs) == 1_000_000_000
    assert min(c.usd for c in costs) > 0
    # The worker's reports are accepted, so the run spends its budget.
    result = simulate(PRESETS["dgm"], replace(wide, tasks=80), seed=0, budget=100)
    assert result.evaluations == result.done_in_database == 100


def test_a_seed_score_out_of_reach_is_refused_before_anything_runs(tmp_path: Path) -> None:
    said = _refused_before_anything_runs(tmp_path, "wide.yaml", "seed_score: 0.001\ndifficulty_sd: 20\n")
    assert "seed_score 0.001 cannot be reached" in said


def test_a_run_whose_edits_almost_never_need_evaluating_stops_at_its_step_cap() -> None:
    idle = replace(LANDSCAPES["default"], name="idle", noop=0.5, invalid=0.49, harmful=0.0, large_gain=0.0)
    result = simulate(PRESETS["dgm"], replace(idle, tasks=80), seed=0, budget=100)
    assert result.steps == 2 * 100  # MAX_STEPS_PER_EVALUATION steps per evaluation of its budget
    assert result.evaluations < 100
