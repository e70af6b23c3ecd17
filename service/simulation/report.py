"""Turning simulated runs into a table (Markdown) and curves (PNG), per landscape.

Every figure is over seeds: the median and the interquartile range (25th to 75th percentile).
The target is the baseline's final true score of its picked agent (median over seeds); a
preset "reaches" it at the first evaluation count from which its median curve stays at or
above the target to the end of the budget.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from service.simulation.presets import PRESETS, Preset
from service.simulation.runner import SimResult

GRID_POINTS = 100
LABEL = "SIMULATION (synthetic landscape; not measured on a real benchmark)"


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
    picked: Curve
    best: Curve
    final_picked: tuple[float, float, float]
    final_best: tuple[float, float, float]
    at_half: tuple[float, float, float]  # picked agent's true score at half the budget
    steps: float  # median steps opened
    reused: float  # median share of evaluations copied from identical code instead of run
    to_target: int | None  # evaluations from which the median curve stays >= target
    seed_to_target: tuple[float, float, float] | None  # per-seed first passage (None: most never)


def grid_for(budget: int) -> list[int]:
    return [round(budget * i / GRID_POINTS) for i in range(GRID_POINTS + 1)]


def curve(results: Sequence[SimResult], grid: list[int], picked: bool) -> Curve:
    low, mid, high = [], [], []
    for e in grid:
        values = [r.at(e).picked if picked else r.at(e).best for r in results]
        q = quartiles(values)
        low.append(q[0])
        mid.append(q[1])
        high.append(q[2])
    return Curve(grid, low, mid, high)


def stays_above(c: Curve, target: float) -> int | None:
    """The first grid point from which the median stays >= target to the end; None if never."""
    reached: int | None = None
    for e, value in zip(c.grid, c.median, strict=True):
        if value < target:
            reached = None
        elif reached is None:
            reached = e
    return reached


def first_passage(result: SimResult, target: float) -> float:
    for sample in result.samples:
        if sample.picked >= target:
            return float(sample.evaluations)
    return float("inf")


def rows_for(results: Sequence[SimResult], baseline: str) -> tuple[list[Row], float, int]:
    """The rows of one landscape's table, the target (the baseline's median final picked score)
    and the budget."""
    budget = results[0].budget
    grid = grid_for(budget)
    by_preset: dict[str, list[SimResult]] = {}
    for r in results:
        by_preset.setdefault(r.preset, []).append(r)
    if baseline not in by_preset:
        raise ValueError(f"the baseline preset {baseline!r} was not run")
    target = quartiles([r.final.picked for r in by_preset[baseline]])[1]
    rows = []
    for name, runs in by_preset.items():
        picked = curve(runs, grid, picked=True)
        passages = [first_passage(r, target) for r in runs]
        seed_q = quartiles(passages)
        rows.append(
            Row(
                preset=PRESETS[name],
                seeds=len(runs),
                picked=picked,
                best=curve(runs, grid, picked=False),
                final_picked=quartiles([r.final.picked for r in runs]),
                final_best=quartiles([r.final.best for r in runs]),
                at_half=quartiles([r.at(budget // 2).picked for r in runs]),
                steps=statistics.median(r.steps for r in runs),
                reused=statistics.median(r.reused / max(r.evaluations + r.reused, 1) for r in runs),
                to_target=stays_above(picked, target),
                seed_to_target=None if seed_q[1] == float("inf") else seed_q,
            )
        )
    return rows, target, budget


def _q(q: tuple[float, float, float]) -> str:
    return f"{q[1]:.3f} [{q[0]:.3f}-{q[2]:.3f}]"


def _evals(value: float) -> str:
    return "never" if value == float("inf") else f"{value:,.0f}"


def table(rows: Sequence[Row], target: float, budget: int, baseline: str) -> str:
    """A Markdown table: one line per preset, the baseline first."""
    head = (
        "| preset | stages | selection | steps | true score picked, at the end | "
        "at half the budget | best in archive, at the end | evaluations to the target "
        "(median curve) | per seed: first reached | half the baseline's evaluations? | "
        "reused, not run |\n"
        "| --- | --- | --- | ---: | --- | --- | --- | ---: | ---: | --- | ---: |\n"
    )
    lines = []
    ordered = sorted(rows, key=lambda r: (r.preset.name != baseline, -r.final_picked[1]))
    for r in ordered:
        to_target = "never" if r.to_target is None else f"{r.to_target:,}"
        seed = "most never" if r.seed_to_target is None else _evals(r.seed_to_target[1])
        if r.preset.name == baseline:
            goal = "(baseline)"
        else:
            goal = "**yes**" if r.to_target is not None and r.to_target <= budget // 2 else "no"
        lines.append(
            f"| {r.preset.name} | {r.preset.stage_text()} | {r.preset.strategy} "
            f"| {r.steps:.0f} | {_q(r.final_picked)} | {_q(r.at_half)} | {_q(r.final_best)} "
            f"| {to_target} | {seed} | {goal} | {r.reused:.1%} |"
        )
    intro = (
        f"Target: the baseline's ({baseline}) final true score, median over seeds: **{target:.3f}**; "
        f"budget: {budget:,} task evaluations per run; figures are median [25th-75th percentile] over "
        f"{rows[0].seeds} seeds.\n\n"
    )
    return intro + head + "\n".join(lines) + "\n"


def plot(rows: Sequence[Row], target: float, budget: int, landscape: str, path: Path) -> None:
    """Median true score of the picked agent against evaluations, with the IQR band, per preset."""
    from matplotlib.figure import Figure  # the `sim` extra; imported only to draw

    figure = Figure(figsize=(11, 5.5), layout="constrained")
    picked_ax, best_ax = figure.subplots(1, 2, sharey=True)
    for row in rows:
        for ax, c in ((picked_ax, row.picked), (best_ax, row.best)):
            (line,) = ax.plot(c.grid, c.median, label=row.preset.name, linewidth=1.6)
            ax.fill_between(c.grid, c.low, c.high, color=line.get_color(), alpha=0.12)
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
    best_ax.legend(fontsize=8, loc="lower right")
    figure.suptitle(
        f"{LABEL}\nlandscape '{landscape}': median and interquartile band over {rows[0].seeds} seeds; "
        f"dashed: the baseline's final score, dotted: half the budget",
        fontsize=10,
    )
    figure.savefig(path, dpi=110)
