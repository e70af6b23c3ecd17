"""`clade bench prepare NAME --option KEY=VALUE`: make every image a run will need, here."""

from __future__ import annotations

import time

import typer
from rich.table import Table

from cli.client import CliError
from cli.context import CliContext
from cli.options import OptionPairs, OptionsFile, benchmark_from_cli
from cli.output import err_console, reported_errors


def prepare(
    ctx: typer.Context,
    name: str,
    option: OptionPairs = None,
    options: OptionsFile = None,
) -> None:
    """Load NAME's tasks (a named dataset is downloaded into the local cache, which the service
    reads, never downloading in a request) and build or pull every image a run on NAME needs."""
    from benchmarks.base import BenchmarkError
    from benchmarks.prepare import prepare_images
    from benchmarks.registry import build_benchmark
    from cli.sandboxes import local_backend
    from sandbox.base import SandboxError

    cli: CliContext = ctx.obj
    config = benchmark_from_cli(name, option, options)
    with reported_errors():
        try:
            err_console.print(f"loading {name}'s tasks (a named dataset downloads the first time) ...")
            started = time.monotonic()
            benchmark = build_benchmark(config)
            loaded = time.monotonic() - started
            err_console.print(f"{len(benchmark.tasks())} tasks loaded in {loaded:.1f} s", highlight=False)
            prepared = prepare_images(
                benchmark,
                images=local_backend("bench-prepare").images,
                progress=lambda line: err_console.print(f"[dim]{line}[/dim]", highlight=False),
            )
        except (BenchmarkError, SandboxError) as exc:
            raise CliError(str(exc)) from exc
    failed = [p for p in prepared if p.status == "failed"]
    if cli.as_json:
        cli.emit_json([p.__dict__ for p in prepared])
    else:
        table = Table("image", "kind", "status", "tasks", "seconds", title=f"{name}: {len(prepared)} images")
        for p in prepared:
            colour = {"failed": "red", "pulled": "cyan", "built": "cyan"}.get(p.status, "green")
            table.add_row(
                p.name, p.kind, f"[{colour}]{p.status}[/{colour}]", str(p.tasks), f"{p.seconds:.1f}"
            )
        cli.console.print(table)
        for p in failed:
            cli.console.print(f"[red]{p.detail}[/red]")
    if failed:
        err_console.print(f"[red]{len(failed)} of {len(prepared)} images are missing[/red]")
        raise typer.Exit(1)
