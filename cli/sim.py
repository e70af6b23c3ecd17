"""`clade sim`: compare run configurations on simulated landscapes (no Docker, model or service)."""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from cli.output import err_console


def sim(
    seeds: Annotated[int, typer.Option(min=1, help="Seeds per preset and landscape.")] = 20,
    budget: Annotated[
        int, typer.Option(min=100, help="Task evaluations per run (the budget every preset gets).")
    ] = 3000,
    landscape: Annotated[
        list[str] | None, typer.Option(help="default or clusters (repeatable) [default: both]")
    ] = None,
    preset: Annotated[
        list[str] | None, typer.Option(help="A preset to run (repeatable), or 'all' [default: all]")
    ] = None,
    out: Annotated[Path, typer.Option(help="Folder for the table and the plots.")] = Path("docs"),
    jobs: Annotated[int, typer.Option(min=1, help="Processes running seeds side by side.")] = 2,
    save: Annotated[
        Path | None, typer.Option(help="Also write every run's samples to this JSON file.")
    ] = None,
    load: Annotated[
        Path | None, typer.Option(help="Run nothing: write the table and plots from a --save file.")
    ] = None,
) -> None:
    """Run presets with the real driver against a simulated worker; write a table and plots.

    The baseline (the Darwin Gödel Machine's default) is always run: it sets the target.
    """
    from service.simulation.batch import Job, run_all
    from service.simulation.landscape import LANDSCAPES
    from service.simulation.presets import BASELINE, PRESETS, get_preset
    from service.simulation.report import LABEL, plot, rows_for, table
    from service.simulation.runner import SimResult

    landscapes = landscape or list(LANDSCAPES)
    for name in landscapes:
        if name not in LANDSCAPES:
            raise typer.BadParameter(f"unknown landscape {name!r}; known: {', '.join(LANDSCAPES)}")
    wanted = list(PRESETS) if not preset or "all" in preset else list(dict.fromkeys([BASELINE, *preset]))
    try:
        chosen = [get_preset(name) for name in wanted]
    except KeyError as exc:
        raise typer.BadParameter(str(exc.args[0])) from None
    skipped = [p for p in chosen if not p.available]
    for p in skipped:
        err_console.print(f"[yellow]skipped {p.name}: strategy {p.strategy!r} is not registered[/yellow]")
    runnable = [p for p in chosen if p.available]
    work = [Job(p.name, land, seed, budget) for land in landscapes for p in runnable for seed in range(seeds)]

    def progress(result: SimResult, done: int, total: int) -> None:
        err_console.print(
            f"[{done}/{total}] {result.landscape} {result.preset} seed {result.seed}: picked "
            f"{result.final.picked:.3f}, best {result.final.best:.3f}, {result.evaluations} evaluations, "
            f"{result.steps} steps, {result.seconds:.1f} s",
            highlight=False,
        )

    if load is not None:
        saved = json.loads(load.read_text())
        results = [SimResult.from_json(r) for r in saved["results"]]
        wall, jobs, command = saved["wall_s"], saved["jobs"], saved["command"]
        budget = results[0].budget
        landscapes = list(dict.fromkeys(r.landscape for r in results))
    else:
        command = "clade " + " ".join(shlex.quote(a) for a in sys.argv[1:])
        started = time.perf_counter()
        results = run_all(work, processes=jobs, progress=progress)
        wall = time.perf_counter() - started
        for r in results:
            if r.done_in_database != r.evaluations:
                err_console.print(
                    f"[red]{r.landscape} {r.preset} seed {r.seed}: {r.evaluations} evaluations answered, "
                    f"{r.done_in_database} done in the database[/red]"
                )
        if save is not None:
            payload = {
                "command": command,
                "wall_s": wall,
                "jobs": jobs,
                "results": [r.to_json() for r in results],
            }
            save.write_text(json.dumps(payload))
    steps = sum(r.steps for r in results)
    evaluations = sum(r.evaluations for r in results)
    busy = sum(r.seconds for r in results)
    rate = (
        f"{steps:,} steps and {evaluations:,} evaluations in {wall:.0f} s with {jobs} processes: "
        f"{steps / wall * 60:,.0f} steps/minute ({steps / busy * 60:,.0f} per process), "
        f"{evaluations / wall * 60:,.0f} evaluations/minute"
    )
    out.mkdir(parents=True, exist_ok=True)
    parts = [
        f"# Simulation results\n\n**{LABEL}.** Written by `{command}`; how to read it: "
        f"[simulation.md](simulation.md).\n\nSpeed: {rate}.\n"
    ]
    if skipped:
        parts.append("Not run (strategy not registered): " + ", ".join(p.name for p in skipped) + ".\n")
    for land in landscapes:
        rows, target, _ = rows_for([r for r in results if r.landscape == land], BASELINE)
        image = out / f"simulation-{land}.png"
        plot(rows, target, budget, land, image)
        parts.append(
            f"## Landscape `{land}`\n\n![{land}]({image.name})\n\n{table(rows, target, budget, BASELINE)}"
        )
        err_console.print(f"wrote {image}")
    results_file = out / "simulation-results.md"
    results_file.write_text("\n".join(parts))
    err_console.print(f"wrote {results_file}\n{rate}", highlight=False)
