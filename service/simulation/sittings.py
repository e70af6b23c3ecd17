"""Saved sittings (`runs.json`) read back, and several joined into one for the tables.

A long comparison can be run in pieces (on one machine in turn, or on several at once) and its
tables written from all of them (`clade sim --load A --load B`). Runs are deterministic for a
given code, preset, landscape, seed and budget, so a run two pieces both hold (the baseline
runs in every sitting) must be the same run in both: if it is not, the pieces came from
different code or settings and are refused rather than mixed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from service.simulation.landscape import LANDSCAPE_NAME
from service.simulation.limits import MAX_BUDGET, MIN_BUDGET
from service.simulation.presets import BASELINE, PRESETS
from service.simulation.runner import SimResult

# What can differ between two runs of the same job: how long it took.
_TIMING = ("seconds",)


class SittingFileError(ValueError):
    """A saved sitting that cannot be read, or sittings that cannot be joined (names the file)."""


# What a saved run may hold: the tables trust these numbers, and a landscape's name becomes a
# file name, so a hand-edited or foreign file is checked field by field before any is used.
_Share = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
_Amount = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]
_Count = Annotated[int, Field(ge=0)]


class _Saved(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _SavedSample(_Saved):
    evaluations: _Count
    steps: _Count
    picked: _Share
    best: _Share

    @model_validator(mode="after")
    def _picked_in_archive(self) -> Self:
        # The picked agent is one of the archive's, so its true score cannot pass the best one's.
        if self.picked > self.best:
            raise ValueError("picked is above best (the picked agent is one of the archive's)")
        return self


class _SavedRun(_Saved):
    preset: str
    landscape: Annotated[str, Field(pattern=f"^{LANDSCAPE_NAME.pattern}$")]
    seed: _Count
    budget: Annotated[int, Field(ge=MIN_BUDGET, le=MAX_BUDGET)]
    seed_score: Annotated[float, Field(gt=0.0, lt=1.0, allow_inf_nan=False)]
    samples: Annotated[list[_SavedSample], Field(min_length=1)]
    evaluations: _Count
    done_in_database: _Count
    reused: _Count
    steps: _Count
    mutations: dict[str, _Count]
    ticks: _Count
    seconds: _Amount
    cost_usd: _Amount
    task_seconds: _Amount
    cost_in_database: _Amount
    heldout_bounds: Annotated[list[_Share], Field(min_length=2, max_length=2)] | None  # JSON has no tuple
    candidates_best: _Share | None

    @model_validator(mode="after")
    def _in_order(self) -> Self:
        for earlier, later in pairwise(self.samples):
            if later.evaluations < earlier.evaluations or later.steps < earlier.steps:
                raise ValueError("samples must come in the order they were taken")
        if self.evaluations > self.budget or self.samples[-1].evaluations > self.evaluations:
            raise ValueError(
                "evaluations: a run spends at most its budget, its samples at most its evaluations"
            )
        if self.heldout_bounds is not None and self.heldout_bounds[0] > self.heldout_bounds[1]:
            raise ValueError("heldout_bounds: the lower bound is above the upper one")
        return self


class _SavedSitting(_Saved):
    command: str
    sitting: str
    wall_s: _Amount
    jobs: Annotated[int, Field(ge=1)]
    skipped: dict[str, str | None] = {}
    results: list[_SavedRun]


def _first_problem(exc: ValidationError) -> str:
    """The first thing wrong, where it is: `results[3].samples[0].picked: ...`."""
    error = exc.errors()[0]
    where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error["loc"])
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where.lstrip('.') or 'the file'}: {error['msg']}{more}"


@dataclass(frozen=True)
class Sitting:
    command: str
    sitting: str  # when it ran (UTC)
    wall_s: float
    jobs: int
    results: list[SimResult]
    skipped: dict[str, str | None] = field(default_factory=dict)


def read_sitting(path: Path) -> Sitting:
    """The sitting saved in `path` (a `runs.json` that `clade sim` wrote)."""
    try:
        saved = json.loads(path.read_text())
    except OSError as exc:
        raise SittingFileError(f"{path}: cannot be read ({exc.strerror})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SittingFileError(f"{path}: not a runs.json written by `clade sim` ({exc})") from None
    if not isinstance(saved, dict):
        raise SittingFileError(f"{path}: not a runs.json written by `clade sim` (not an object)")
    try:
        checked = _SavedSitting.model_validate(saved)
    except ValidationError as exc:
        raise SittingFileError(
            f"{path}: not a runs.json written by `clade sim` ({_first_problem(exc)})"
        ) from None
    results = [SimResult.from_json(run.model_dump()) for run in checked.results]
    sitting = Sitting(
        command=checked.command,
        sitting=checked.sitting,
        wall_s=checked.wall_s,
        jobs=checked.jobs,
        results=results,
        skipped=checked.skipped,
    )
    if not results:
        raise SittingFileError(f"{path}: holds no runs")
    unknown = sorted({r.preset for r in results} - set(PRESETS))
    if unknown:
        raise SittingFileError(f"{path}: runs of presets this version does not know: {', '.join(unknown)}")
    if BASELINE not in {r.preset for r in results}:
        raise SittingFileError(f"{path}: holds no runs of the baseline ({BASELINE}) to compare with")
    first: dict[tuple[str, str, int], int] = {}
    for index, result in enumerate(results):
        if result.budget != results[0].budget:
            raise SittingFileError(
                f"{path}: results[{index}] ran at budget {result.budget}, results[0] at "
                f"{results[0].budget}; a sitting runs at one budget"
            )
        key = (result.preset, result.landscape, result.seed)
        if key in first:
            raise SittingFileError(
                f"{path}: results[{first[key]}] and results[{index}] are both {result.preset} on "
                f"{result.landscape}, seed {result.seed}; a sitting holds a run once"
            )
        first[key] = index
    return sitting


def join_sittings(pieces: Sequence[tuple[Path, Sitting]]) -> Sitting:
    """One sitting holding every run of `pieces` once (in their order); wall times add up.

    Refused: pieces at different budgets, and a run two pieces hold with different results.
    """
    if not pieces:
        raise ValueError("no sittings to join")
    seen: dict[tuple[float, tuple[tuple[str, str, int, float], ...]], Path] = {}
    for path, piece in pieces:
        # The same sitting twice would count its wall time twice (a copy under another name too).
        # Two sittings are told apart by their timings: no two real runs take the same seconds.
        sitting = (piece.wall_s, tuple((r.preset, r.landscape, r.seed, r.seconds) for r in piece.results))
        if sitting in seen:
            raise SittingFileError(
                f"{path} and {seen[sitting]} are the same sitting ({piece.sitting}): give it once"
            )
        seen[sitting] = path
    if len(pieces) == 1:
        _check_baseline(pieces[0][1].results, str(pieces[0][0]))
        return pieces[0][1]
    first_path, first = pieces[0]
    budget = first.results[0].budget
    held: dict[tuple[str, str, int], tuple[Path, SimResult]] = {}
    for path, piece in pieces:
        for result in piece.results:
            if result.budget != budget:
                raise SittingFileError(
                    f"{path}: runs at budget {result.budget}, {first_path} at {budget}; "
                    "only runs at one budget are compared"
                )
            key = (result.preset, result.landscape, result.seed)
            if key not in held:
                held[key] = (path, result)
            elif not _same_run(held[key][1], result):
                raise SittingFileError(
                    f"{path} and {held[key][0]} both ran {result.preset} on {result.landscape}, seed "
                    f"{result.seed}, and got different runs: they come from different code or settings"
                )
    _check_baseline([result for _, result in held.values()], "the sittings joined")
    ran = {result.preset for _, result in held.values()}
    return Sitting(
        command="; ".join(dict.fromkeys(piece.command for _, piece in pieces)),
        sitting=", ".join(dict.fromkeys(piece.sitting for _, piece in pieces)),
        wall_s=sum(piece.wall_s for _, piece in pieces),
        jobs=max(piece.jobs for _, piece in pieces),
        results=[result for _, result in held.values()],
        # A preset one piece could not run and another did is not "not run".
        skipped={name: why for _, p in pieces for name, why in p.skipped.items() if name not in ran},
    )


def _check_baseline(results: Sequence[SimResult], where: str) -> None:
    """Every run has the baseline's run on its landscape and seed to be compared with."""
    baseline = {(r.landscape, r.seed) for r in results if r.preset == BASELINE}
    for result in results:
        if (result.landscape, result.seed) not in baseline:
            raise SittingFileError(
                f"{where}: {result.preset} ran on {result.landscape}, seed {result.seed}, and the "
                f"baseline {BASELINE} did not; every run is compared with {BASELINE} on its own seed"
            )


def _same_run(one: SimResult, other: SimResult) -> bool:
    """The same outcome: every field but the timing equal (sums of reported costs to rounding,
    since older sittings added them in the order a tick's jobs happened to be answered)."""
    mine, theirs = one.to_json(), other.to_json()
    for key, value in mine.items():
        if key in _TIMING:
            continue
        if isinstance(value, float) and isinstance(theirs[key], float):
            if not math.isclose(value, theirs[key], rel_tol=1e-9):
                return False
        elif value != theirs[key]:
            return False
    return True
