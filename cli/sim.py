"""`clade sim`: compare run configurations on simulated landscapes (no Docker, model or service)."""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli.output import err_console
from service.simulation.limits import MAX_BUDGET, MAX_SEEDS, MIN_BUDGET

if TYPE_CHECKING:
    from service.simulation.runner import SimResult

# What `clade sim` runs with no options: a look in minutes. `--full` is the whole comparison.
QUICK_PRESETS = ("dgm", "clade", "clade/2")
FULL_SEEDS = 40
# Processes beyond a few per core only add memory.
JOBS_PER_CORE = 4


# A sitting may keep at most this share of the machine's memory for its agents (the rest is
# for the runs' databases, the other processes and the page cache).
MEMORY_SHARE = 0.5
CGROUP_MEMORY_MAX = Path("/sys/fs/cgroup/memory.max")


def _machine_memory() -> int | None:
    """Bytes of memory this process may use: the machine's, or its container's limit if lower
    (None where neither can be read)."""
    try:
        physical: int | None = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        physical = None
    try:
        limit = CGROUP_MEMORY_MAX.read_text().strip()
    except OSError:
        limit = "max"
    if limit.isdigit():
        return min(int(limit), physical) if physical is not None else int(limit)
    return physical


def _default_out() -> Path:
    return Path(f"clade-sim-{datetime.now(UTC):%Y%m%d-%H%M%S}")


def sim(
    ctx: typer.Context,
    seeds: Annotated[
        int | None,
        typer.Option(min=1, max=MAX_SEEDS, help="Seeds per preset and landscape (default 2; --full: 40)."),
    ] = None,
    first_seed: Annotated[
        int,
        typer.Option(
            min=0, help="The first seed: seeds run from here (a recipe chosen on 0-39 checked on others)."
        ),
    ] = 0,
    budget: Annotated[
        int,
        typer.Option(
            min=MIN_BUDGET, max=MAX_BUDGET, help="B: task evaluations per run (a /2 preset gets B/2)."
        ),
    ] = 2000,
    landscape: Annotated[
        list[str] | None,
        typer.Option(
            help="A built-in landscape, a YAML landscape file, or 'all' (repeatable; default: all six)"
        ),
    ] = None,
    preset: Annotated[
        list[str] | None,
        typer.Option(
            help="A preset (repeatable), 'main' (the comparison's presets and their /2 twins) or 'all' "
            f"(default: {', '.join(QUICK_PRESETS)}; with --full: main)"
        ),
    ] = None,
    full: Annotated[
        bool, typer.Option("--full", help=f"The whole comparison: --preset main, {FULL_SEEDS} seeds.")
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option(help="A new (or empty) folder for the results (default: ./clade-sim-<UTC time>)"),
    ] = None,
    jobs: Annotated[
        int,
        typer.Option(min=1, help=f"Processes running seeds side by side (at most {JOBS_PER_CORE} a core)."),
    ] = 2,
    load: Annotated[
        list[Path] | None,
        typer.Option(
            help="Run nothing: write the tables and plots from an earlier runs.json (repeatable: "
            "sittings run in pieces are joined; a run two of them hold must be the same run)."
        ),
    ] = None,
) -> None:
    """Run presets with the real driver against a simulated worker; write tables and plots.

    The baseline (the Darwin Gödel Machine's default, `dgm`) always runs: every preset is
    compared with it at the full budget, paired by seed.
    """
    from service.simulation.batch import Job, SimRunError, run_all
    from service.simulation.landscape import LANDSCAPES, Landscape, LandscapeConfig
    from service.simulation.landscape_file import LandscapeFileError, resolve_landscape
    from service.simulation.presets import BASELINE, PRESETS, get_preset, main_presets
    from service.simulation.runner import memory_bound, no_room_to_search
    from service.simulation.sittings import SittingFileError, join_sittings, read_sitting
    from service.simulation.stopping import Interrupted, catching_stop_signals, exit_code

    if load:
        # A saved sitting is redrawn as it ran: options that choose what runs would be ignored.
        given = [
            f"--{name.replace('_', '-')}"
            for name in ("seeds", "first_seed", "budget", "landscape", "preset", "full", "jobs")
            # typer vendors its own click: its ParameterSource is compared by name, not imported
            if getattr(ctx.get_parameter_source(name), "name", None) == "COMMANDLINE"
        ]
        if given:
            raise typer.BadParameter(
                f"--load redraws the saved sittings as they ran; {', '.join(given)} cannot be given with it",
                param_hint="--load",
            )
    cores = os.cpu_count() or 1
    if jobs > JOBS_PER_CORE * cores:
        raise typer.BadParameter(
            f"{jobs} processes on {cores} cores: give at most {JOBS_PER_CORE * cores}", param_hint="--jobs"
        )
    folder = out if out is not None else _default_out()
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise typer.BadParameter(
            f"{folder} exists and is not an empty folder: give a new one", param_hint="--out"
        )

    landscapes: list[LandscapeConfig] = []
    for name in landscape or ["all"]:
        try:
            landscapes += list(LANDSCAPES.values()) if name == "all" else [resolve_landscape(name)]
        except LandscapeFileError as exc:
            raise typer.BadParameter(str(exc), param_hint="--landscape") from None
    for land in landscapes:  # a seed score out of reach is refused now, not when its first run starts
        try:
            Landscape(land, first_seed).seed_logits()
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--landscape") from None
    names = [c.name for c in landscapes]
    if len(set(names)) != len(names):
        raise typer.BadParameter(f"two landscapes share a name: {names}", param_hint="--landscape")
    asked = preset or (["main"] if full else list(QUICK_PRESETS))
    wanted: list[str] = [BASELINE]
    for name in asked:
        wanted += list(PRESETS) if name == "all" else main_presets() if name == "main" else [name]
    try:
        chosen = [get_preset(name) for name in dict.fromkeys(wanted)]
    except KeyError as exc:
        raise typer.BadParameter(str(exc.args[0]), param_hint="--preset") from None
    skipped = {p.name: p.unavailable_reason() for p in chosen if not p.available}
    for name, reason in skipped.items():
        err_console.print(f"[yellow]not run: {name}: {reason}[/yellow]", highlight=False)
    for p in chosen:
        cramped = no_room_to_search(p, budget) if p.available else None
        if cramped is not None:
            skipped[p.name] = cramped
            err_console.print(f"[yellow]not run: {p.name}: {cramped}[/yellow]", highlight=False)
    runnable = [p for p in chosen if p.name not in skipped]
    for land in landscapes:
        short = [f"{p.name} (needs {p.tasks_needed()})" for p in runnable if p.tasks_needed() > land.tasks]
        if short:
            raise typer.BadParameter(
                f"landscape {land.name!r} has {land.tasks} tasks, too few for {', '.join(short)} "
                "(a run's stage and held-out tasks never overlap)",
                param_hint="--landscape",
            )
    count = seeds if seeds is not None else FULL_SEEDS if full else 2
    seed_range = range(first_seed, first_seed + count)
    work = [Job(p.name, land, seed, budget) for land in landscapes for p in runnable for seed in seed_range]
    memory = None if load else _machine_memory()  # --load runs nothing
    if memory is not None:
        side_by_side = min(jobs, len(work))
        for land in landscapes:
            need = side_by_side * max((memory_bound(p, land, budget) for p in runnable), default=0)
            if need > memory * MEMORY_SHARE:
                raise typer.BadParameter(
                    f"landscape {land.name!r}: {land.tasks:,} tasks at --budget {budget:,} may keep "
                    f"{need / 2**30:.1f} GiB of agents in {side_by_side} processes, more than "
                    f"{MEMORY_SHARE:.0%} of this machine's {memory / 2**30:.1f} GiB; give fewer tasks, a "
                    "smaller --budget or fewer --jobs",
                    param_hint="--landscape",
                )

    started = time.perf_counter()

    def progress(result: SimResult, done: int, total: int) -> None:
        elapsed = time.perf_counter() - started
        left = elapsed / done * (total - done)
        err_console.print(
            f"[{done}/{total}, {elapsed / 60:.1f} min, ~{left / 60:.0f} min left] {result.landscape} "
            f"{result.preset} seed {result.seed}: picked {result.final.picked:.3f}, best "
            f"{result.final.best:.3f}, {result.evaluations} evaluations, {result.steps} steps",
            highlight=False,
        )

    if load:
        try:
            joined = join_sittings([(path, read_sitting(path)) for path in load])
        except SittingFileError as exc:
            raise typer.BadParameter(str(exc), param_hint="--load") from None
        results, wall, jobs = joined.results, joined.wall_s, joined.jobs
        command, sitting, skipped = joined.command, joined.sitting, joined.skipped
        names = list(dict.fromkeys(r.landscape for r in results))
        _make_folder(folder)
    else:
        command = "clade " + " ".join(shlex.quote(a) for a in sys.argv[1:])
        sitting = f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
        made = not folder.exists()
        try:
            # From before the folder is made: a stop at any moment after it removes the folder.
            with catching_stop_signals():
                _make_folder(folder)  # now: a folder that cannot be made is refused before hours of runs
                err_console.print(f"{len(work)} runs into {folder}/ ({_processes(jobs)})", highlight=False)
                results = run_all(work, processes=jobs, progress=progress)
        except SimRunError as exc:
            err_console.print(f"[red]error: {exc}[/red]", highlight=False)
            raise typer.Exit(1) from None
        except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM or a closed terminal (`Interrupted`)
            # Results are written only when every run has ended: nothing is half written.
            removed = made and folder.is_dir() and not any(folder.iterdir())
            if removed:
                folder.rmdir()
            where = "removed" if removed else "left as it was"
            err_console.print(
                f"[yellow]interrupted: no results written ({folder} {where})[/yellow]", highlight=False
            )
            signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
            raise typer.Exit(exit_code(signum)) from None
        wall = time.perf_counter() - started
        for r in results:
            if r.done_in_database != r.evaluations:
                err_console.print(
                    f"[red]{r.landscape} {r.preset} seed {r.seed}: {r.evaluations} evaluations answered, "
                    f"{r.done_in_database} done in the database[/red]"
                )
    _write(
        folder,
        results,
        landscapes=names,
        command=command,
        sitting=sitting,
        wall=wall,
        jobs=jobs,
        skipped=skipped,
        save=load is None,
    )


def _processes(count: int) -> str:
    return f"{count} process" if count == 1 else f"{count} processes"


def _make_folder(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise typer.BadParameter(
            f"{folder} cannot be made: {exc.strerror or exc}", param_hint="--out"
        ) from None


def _write(
    folder: Path,
    results: list[SimResult],
    *,
    landscapes: list[str],
    command: str,
    sitting: str,
    wall: float,
    jobs: int,
    skipped: dict[str, str | None],
    save: bool,
) -> None:
    """results.md, a plot per landscape and (for a new sitting) runs.json, all inside `folder`."""
    from service.simulation.presets import BASELINE
    from service.simulation.report import LABEL, goals, plot, rows_for, table

    steps = sum(r.steps for r in results)
    evaluations = sum(r.evaluations for r in results)
    busy = sum(r.seconds for r in results) or 1e-9
    rate = (
        f"{len(results):,} runs, {steps:,} steps and {evaluations:,} evaluations in {wall:,.0f} s with "
        f"{_processes(jobs)}: {steps / max(wall, 1e-9) * 60:,.0f} steps/minute "
        f"({steps / busy * 60:,.0f} per process)"
    )
    if save:
        payload = {
            "command": command,
            "sitting": sitting,
            "wall_s": wall,
            "jobs": jobs,
            "skipped": skipped,
            "results": [r.to_json() for r in results],
        }
        (folder / "runs.json").write_text(json.dumps(payload))
    parts = [f"# Simulation results\n\n**{LABEL}.**\n\nWritten by `{command}` ({sitting}). {rate}.\n"]
    if skipped:
        parts.append(
            "Not run: " + "; ".join(f"`{name}` ({reason})" for name, reason in skipped.items()) + ".\n"
        )
    per_landscape = {}
    sections = []
    for land in landscapes:
        mine = [r for r in results if r.landscape == land]
        rows, budget = rows_for(mine, BASELINE)
        per_landscape[land] = rows
        section = f"## Landscape `{land}`\n\n"
        image = folder / f"simulation-{land}.png"
        try:
            plot(rows, rows[0].final_picked[1], budget, land, image)
            section += f"![{land}]({image.name})\n\n"
        except ImportError:
            section += "(No plot: matplotlib is not installed; `pip install 'clade[sim]'`.)\n\n"
        section += table(rows, budget, BASELINE)
        section += _against_hgm_paper(mine)
        sections.append(section)
    parts.append("## Goals against the baseline at B\n\n" + goals(per_landscape, BASELINE))
    parts += sections
    (folder / "results.md").write_text("\n".join(parts))
    err_console.print(f"wrote {folder}/results.md\n{rate}", highlight=False)


def _against_hgm_paper(results: list[SimResult]) -> str:
    """Every other full-budget preset against `hgm-paper` at the same budget (the issue's second
    goal), one line each, those that lose included; nothing when `hgm-paper` did not run."""
    from service.simulation.presets import BASELINE, PRESETS
    from service.simulation.report import head_to_head

    rival = "hgm-paper"
    names = dict.fromkeys(
        r.preset
        for r in results
        if r.preset not in (BASELINE, rival) and PRESETS[r.preset].budget_share == 1.0
    )
    lines = []
    for name in names:
        versus = head_to_head(results, name, rival)
        if versus is None:
            continue
        lines.append(
            f"`{name}` against `{rival}`, both at B, paired: >= on {versus.at_least}/{versus.seeds} "
            f"seeds ({versus.ties} ties), sign test p = {versus.p_value:.3f}, median difference "
            f"{versus.median_difference:+.3f} [{versus.interval[0]:+.3f}, {versus.interval[1]:+.3f}]."
        )
    return "".join(f"\n{line}\n" for line in lines)
