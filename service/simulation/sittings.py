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
from pathlib import Path

from service.simulation.presets import BASELINE, PRESETS
from service.simulation.runner import SimResult

# What can differ between two runs of the same job: how long it took.
_TIMING = ("seconds",)


class SittingFileError(ValueError):
    """A saved sitting that cannot be read, or sittings that cannot be joined (names the file)."""


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
    missing = [key for key in ("command", "sitting", "wall_s", "jobs", "results") if key not in saved]
    if missing:
        raise SittingFileError(f"{path}: not a runs.json written by `clade sim` (no {', '.join(missing)})")
    try:
        results = [SimResult.from_json(dict(r)) for r in saved["results"]]
        sitting = Sitting(
            command=str(saved["command"]),
            sitting=str(saved["sitting"]),
            wall_s=float(saved["wall_s"]),
            jobs=int(saved["jobs"]),
            results=results,
            skipped=dict(saved.get("skipped", {})),
        )
    except (TypeError, KeyError, ValueError) as exc:
        raise SittingFileError(f"{path}: not a runs.json written by `clade sim` ({exc})") from None
    if not results:
        raise SittingFileError(f"{path}: holds no runs")
    unknown = sorted({r.preset for r in results} - set(PRESETS))
    if unknown:
        raise SittingFileError(f"{path}: runs of presets this version does not know: {', '.join(unknown)}")
    if BASELINE not in {r.preset for r in results}:
        raise SittingFileError(f"{path}: holds no runs of the baseline ({BASELINE}) to compare with")
    return sitting


def join_sittings(pieces: Sequence[tuple[Path, Sitting]]) -> Sitting:
    """One sitting holding every run of `pieces` once (in their order); wall times add up.

    Refused: pieces at different budgets, and a run two pieces hold with different results.
    """
    if not pieces:
        raise ValueError("no sittings to join")
    if len(pieces) == 1:
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
