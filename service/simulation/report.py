"""Turning simulated runs into tables (Markdown) and curves (PNG), per landscape.

Every comparison is paired by seed against the baseline (`dgm`) at the FULL budget B: a preset's
final picked true score (at B, or at B/2 for a `/2` preset, which ends there) against the
baseline's at B on the same seed, counted (wins, ties, losses), with a one-sided sign test
(ties left out) and a bootstrap interval of the median difference. Crossings: for score levels
at 50%, 75% and 100% of the baseline's own median gain, the evaluations from which a preset's
median curve stays at the level, over the baseline's OWN crossing of that level (not over B).

A ceiling beside each count: on how many seeds the best agent in the preset's archive is at or
above the baseline's pick. No rule for naming the best can do better than a perfect one, so a
preset whose ceiling is short of the goal needs a better search, not a better pick.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from service.simulation.presets import PRESETS, Preset
from service.simulation.runner import SimResult, own_budget
from service.simulation.stats import TIE, CrossingRatio, PairedComparison, compare, crossing, crossing_ratio

GRID_POINTS = 100
LABEL = "SIMULATION (synthetic landscape; not measured on a real benchmark)"
LEVELS = (0.5, 0.75, 1.0)  # shares of the baseline's median gain at B
GOAL_SHARE = 26 / 40  # the goal: >= the baseline on 26 of 40 seeds
GOAL_P = 0.05


def quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    """(25th percentile, median, 75th percentile), inclusive method."""
    if len(values) == 1:
        return values[0], values[0], values[0]
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


@dataclass(frozen=True)
class Curve:
    """The median and IQR band over seeds of one measure, on the evaluation grid."""

    grid: list[int]
    low: list[float]
    median: list[float]
    high: list[float]


@dataclass(frozen=True)
class Row:
    preset: Preset
    seeds: int
    spent: int  # the evaluations the preset may spend (B, or B/2)
    picked: Curve
    best: Curve
    final_picked: tuple[float, float, float]  # at the preset's own end
    final_best: tuple[float, float, float]
    ratio_half: float  # median over seeds of picked / best-in-archive at B/2
    ratio_end: float  # ... at the preset's own end
    steps: float
    reused: float
    cost_usd: float  # median dollars per run, as the simulated worker reported them
    versus: PairedComparison | None  # None for the baseline itself
    crossings: list[CrossingRatio]
    covered: tuple[int, int] | None  # (held-out lower bound <= true score, runs held out)
    # Over runs whose held-out phase began: the median of its candidates' best true score over
    # the archive's best, and the share of those runs that named that candidate.
    candidates: tuple[float, float] | None
    # Seeds where the archive's best (at the preset's end) is >= the baseline's pick: what a
    # perfect pick would count (None for the baseline itself).
    ceiling: int | None


def grid_for(budget: int) -> list[int]:
    return [round(budget * i / GRID_POINTS) for i in range(GRID_POINTS + 1)]


def _values(results: Sequence[SimResult], grid: list[int], picked: bool) -> list[list[float]]:
    return [[r.at(e).picked if picked else r.at(e).best for e in grid] for r in results]


def _curve(values: list[list[float]], grid: list[int]) -> Curve:
    low, mid, high = [], [], []
    for g in range(len(grid)):
        q = quartiles([v[g] for v in values])
        low.append(q[0])
        mid.append(q[1])
        high.append(q[2])
    return Curve(grid, low, mid, high)


def _ratio(picked: float, best: float) -> float:
    return picked / best if best > 0 else 1.0


def _candidates(runs: Sequence[SimResult]) -> tuple[float, float] | None:
    """Over the runs whose held-out phase began: (median candidates' best / archive best, share of
    those runs that named that candidate); None when none began."""
    pairs = [(r.candidates_best, r.final) for r in runs if r.candidates_best is not None]
    if not pairs:
        return None
    share = statistics.median(_ratio(best, final.best) for best, final in pairs)
    named = sum(abs(final.picked - best) <= TIE for best, final in pairs) / len(pairs)
    return share, named


def levels_for(baseline: Sequence[SimResult]) -> list[float]:
    """Score levels at LEVELS shares of the baseline's median gain (seed to its final pick)."""
    start = statistics.median(r.seed_score for r in baseline)
    gain = statistics.median(r.final.picked for r in baseline) - start
    return [start + share * gain for share in LEVELS] if gain > 1e-9 else []


def rows_for(results: Sequence[SimResult], baseline: str, *, resamples: int = 400) -> tuple[list[Row], int]:
    """The rows of one landscape's table (the baseline first) and the budget B."""
    budget = results[0].budget
    grid = grid_for(budget)
    by_preset: dict[str, dict[int, SimResult]] = {}
    for r in results:
        by_preset.setdefault(r.preset, {})[r.seed] = r
    if baseline not in by_preset:
        raise ValueError(f"the baseline preset {baseline!r} was not run")
    base = by_preset[baseline]
    levels = levels_for(list(base.values()))
    rows = []
    for name, runs_by_seed in by_preset.items():
        preset = PRESETS[name]
        seeds = sorted(set(runs_by_seed) & set(base))  # paired: only seeds both ran
        runs = [runs_by_seed[s] for s in seeds]
        theirs = [base[s] for s in seeds]
        picked_values = _values(runs, grid, picked=True)
        base_values = _values(theirs, grid, picked=True)
        held = [r for r in runs if r.heldout_bounds is not None]
        rows.append(
            Row(
                preset=preset,
                seeds=len(runs),
                spent=own_budget(preset, budget),
                picked=_curve(picked_values, grid),
                best=_curve(_values(runs, grid, picked=False), grid),
                final_picked=quartiles([r.final.picked for r in runs]),
                final_best=quartiles([r.final.best for r in runs]),
                ratio_half=statistics.median(
                    _ratio(r.at(budget // 2).picked, r.at(budget // 2).best) for r in runs
                ),
                ratio_end=statistics.median(_ratio(r.final.picked, r.final.best) for r in runs),
                steps=statistics.median(r.steps for r in runs),
                reused=statistics.median(r.reused / max(r.evaluations + r.reused, 1) for r in runs),
                cost_usd=statistics.median(r.cost_usd for r in runs),
                versus=None
                if name == baseline
                else compare(
                    [r.final.picked for r in runs], [r.final.picked for r in theirs], resamples=1000
                ),
                crossings=[
                    crossing_ratio(grid, picked_values, base_values, level, resamples=resamples)
                    for level in levels
                ]
                if name != baseline
                else [],
                covered=(
                    sum(r.heldout_bounds[0] <= r.final.picked for r in held if r.heldout_bounds),
                    len(held),
                )
                if held
                else None,
                candidates=_candidates(runs),
                ceiling=None
                if name == baseline
                else sum(r.final.best >= b.final.picked - TIE for r, b in zip(runs, theirs, strict=True)),
            )
        )
    rows.sort(key=lambda r: (r.preset.name != baseline, -r.final_picked[1]))
    return rows, budget


def _q(q: tuple[float, float, float]) -> str:
    return f"{q[1]:.3f} [{q[0]:.3f}-{q[2]:.3f}]"


def _evals(value: float) -> str:
    return "never" if math.isinf(value) else f"{value:,.0f}"


def _times(value: float) -> str:
    return "never" if math.isinf(value) else f"{value:.2f}x"


def _crossing(c: CrossingRatio) -> str:
    if math.isinf(c.policy):
        return f"never (dgm {_evals(c.baseline)})"
    return (
        f"{_evals(c.policy)} / {_evals(c.baseline)} = {_times(c.ratio)} "
        f"[{_times(c.interval[0])}-{_times(c.interval[1])}]"
    )


def meets_goal(versus: PairedComparison) -> bool:
    """>= the baseline on at least 26/40 of the seeds (scaled) and sign test p < 0.05."""
    return versus.at_least >= math.ceil(GOAL_SHARE * versus.seeds - 1e-9) and versus.p_value < GOAL_P


def table(rows: Sequence[Row], budget: int, baseline: str) -> str:
    """A Markdown table: one line per preset, the baseline first, those that lose included."""
    base = rows[0]
    levels = [c.level for c in rows[1].crossings] if len(rows) > 1 else []
    head = (
        "| preset | ends at | steps | picked true score at its end | best in archive | "
        f">= {baseline} at B (ties) | a perfect pick >= {baseline} at B | sign p | median difference [95%] | "
        "picked/best at B/2, at end | "
        + " | ".join(f"evaluations to {lv:.3f}, ratio [95%]" for lv in levels)
        + (" | " if levels else "")
        + "held-out LB <= true | held-out candidates' best / best, runs naming it | $ per run |\n"
        + "| --- | ---: | ---: | --- | --- | ---: | ---: | ---: | --- | --- | "
        + "".join("--- | " for _ in levels)
        + "---: | --- | ---: |\n"
    )
    lines = []
    for r in rows:
        if r.versus is None:
            versus = "(baseline)"
            p = diff = ceiling = ""
        else:
            v = r.versus
            mark = "**" if meets_goal(v) else ""
            versus = f"{mark}{v.at_least}/{v.seeds}{mark} ({v.ties})"
            p = f"{v.p_value:.3f}"
            ceiling = f"{r.ceiling}/{v.seeds}"
            diff = f"{v.median_difference:+.3f} [{v.interval[0]:+.3f}, {v.interval[1]:+.3f}]"
        crossings = (
            " | ".join(_crossing(c) for c in r.crossings)
            if r.crossings
            else " | ".join(_evals(_own(base, lv)) for lv in levels)
        )
        covered = "" if r.covered is None else f"{r.covered[0]}/{r.covered[1]}"
        candidates = "" if r.candidates is None else f"{r.candidates[0]:.2f}, {r.candidates[1]:.0%}"
        lines.append(
            f"| {r.preset.name} | {r.spent:,} | {r.steps:.0f} | {_q(r.final_picked)} | {_q(r.final_best)} "
            f"| {versus} | {ceiling} | {p} | {diff} | {r.ratio_half:.2f}, {r.ratio_end:.2f} | "
            + (crossings + " | " if levels else "")
            + f"{covered} | {candidates} | {r.cost_usd:,.0f} |"
        )
    intro = (
        f"Budget B = {budget:,} task evaluations; {base.seeds} seeds, paired. The baseline ({baseline}) "
        f"ends at a picked true score of {_q(base.final_picked)} (median [IQR]). Bold: the issue's goal "
        f"met (>= {baseline} at B on at least {GOAL_SHARE:.0%} of seeds, ties counted as >=, and sign "
        f"test p < {GOAL_P}, ties left out). A perfect pick: the seeds where the best agent in the "
        f"preset's archive is at or above {baseline}'s pick, the most any rule for naming the best "
        "could count.\n\n"
    )
    if not levels and len(rows) > 1:
        intro += "The baseline gains nothing here (median), so no crossing levels are defined.\n\n"
    return intro + head + "\n".join(lines) + "\n"


def _own(base: Row, level: float) -> float:
    return crossing(base.picked.grid, base.picked.median, level)


def goals(per_landscape: dict[str, list[Row]], baseline: str) -> str:
    """Per preset: on how many landscapes it meets the goal against the baseline at B."""
    names: list[str] = []
    for rows in per_landscape.values():
        names += [r.preset.name for r in rows if r.versus is not None and r.preset.name not in names]
    lines = [
        f"| preset | ends at | landscapes where >= {baseline} at B on {GOAL_SHARE:.0%} of seeds, "
        f"p < {GOAL_P} | per landscape: >= count, p (a perfect pick's count) |",
        "| --- | --- | ---: | --- |",
    ]
    for name in names:
        cells, met = [], 0
        for land, rows in per_landscape.items():
            row = next((r for r in rows if r.preset.name == name), None)
            if row is None or row.versus is None:
                continue
            met += meets_goal(row.versus)
            cells.append(
                f"{land} {row.versus.at_least}/{row.versus.seeds}, {row.versus.p_value:.3f} "
                f"(perfect pick {row.ceiling})"
            )
        share = "B/2" if PRESETS[name].budget_share != 1.0 else "B"
        lines.append(f"| {name} | {share} | {met} of {len(cells)} | {'; '.join(cells)} |")
    return "\n".join(lines) + "\n"


def head_to_head(results: Sequence[SimResult], policy: str, rival: str) -> PairedComparison | None:
    """`policy` against `rival` on the same seeds (None when either was not run)."""
    mine = {r.seed: r for r in results if r.preset == policy}
    theirs = {r.seed: r for r in results if r.preset == rival}
    seeds = sorted(set(mine) & set(theirs))
    if not seeds:
        return None
    return compare([mine[s].final.picked for s in seeds], [theirs[s].final.picked for s in seeds])


def plot(rows: Sequence[Row], target: float, budget: int, landscape: str, path: Path) -> None:
    """Median true score of the picked agent against evaluations, with the IQR band, per preset."""
    from matplotlib.figure import Figure  # the `sim` extra; imported only to draw

    figure = Figure(figsize=(11, 5.5), layout="constrained")
    picked_ax, best_ax = figure.subplots(1, 2, sharey=True)
    for row in rows:
        style = "--" if row.preset.budget_share != 1.0 else "-"
        for ax, c in ((picked_ax, row.picked), (best_ax, row.best)):
            (line,) = ax.plot(c.grid, c.median, style, label=row.preset.name, linewidth=1.4)
            ax.fill_between(c.grid, c.low, c.high, color=line.get_color(), alpha=0.08)
    for ax, title in (
        (picked_ax, "true score of the agent the run picks"),
        (best_ax, "best true score in the archive"),
    ):
        ax.axhline(target, color="black", linestyle="--", linewidth=0.8)
        ax.axvline(budget / 2, color="grey", linestyle=":", linewidth=0.8)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("task evaluations spent")
        ax.grid(alpha=0.3)
    picked_ax.set_ylabel("true score (mean solve chance over the task pool)")
    best_ax.legend(fontsize=7, loc="lower right", ncol=2)
    figure.suptitle(
        f"{LABEL}\nlandscape '{landscape}': median and interquartile band over {rows[0].seeds} seeds; "
        "dashed lines: /2 presets (end at B/2); black dashed: the baseline's final score; dotted: B/2",
        fontsize=10,
    )
    figure.savefig(path, dpi=110)
