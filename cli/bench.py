"""`clade bench ...`: list benchmarks, check a benchmark's tasks, score one agent outside a run."""

from __future__ import annotations

import json
import time
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cli.client import CliError
from cli.context import CliContext
from cli.output import fmt_score, fmt_usd, reported_errors

app = typer.Typer(no_args_is_help=True)


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())


@app.command("list")
def list_benchmarks(ctx: typer.Context) -> None:
    """Benchmarks the service knows, with their tasks and named subsets."""
    cli: CliContext = ctx.obj
    with reported_errors():
        benchmarks = cli.client().get("/api/benchmarks")
    if cli.as_json:
        cli.emit_json(benchmarks)
        return
    table = Table("benchmark", "tasks", "subsets", "note")
    for bench in benchmarks:
        subsets = ", ".join(f"{name} ({count})" for name, count in bench["subsets"].items())
        table.add_row(bench["name"], str(bench["tasks"] or "-"), subsets, (bench["note"] or "")[:80])
    cli.console.print(table)


@app.command("check")
def check(
    ctx: typer.Context,
    name: str,
    workers: Annotated[int, typer.Option(min=1, help="Tasks graded in parallel")] = 2,
    timeout: Annotated[float, typer.Option(help="Seconds for each task's tests")] = 300,
    option: Annotated[
        list[str] | None,
        typer.Option(
            help="A benchmark option KEY=VALUE (repeatable); VALUE is JSON, or a comma-separated "
            "list (`languages=go,rust`, `languages=go,`), or a string (`root=/data/polyglot`)"
        ),
    ] = None,
) -> None:
    """Grade every task with its gold patch and with the empty patch, here (needs Docker)."""
    from benchmarks.base import BenchmarkError
    from benchmarks.check import check_benchmark
    from benchmarks.images import build_benchmark_image, has_image
    from benchmarks.registry import get_benchmark
    from contracts.settings import get_settings
    from sandbox.base import SandboxError
    from sandbox.docker_backend import connect
    from sandbox.images.build import ensure_base_image
    from sandbox.registry import get_backend

    cli: CliContext = ctx.obj
    settings = get_settings()
    with reported_errors():
        options = parse_options(option or [])
        try:
            image = ensure_base_image(connect(), settings.image_cache_dir)
            if has_image(name) and not cli.as_json:
                cli.console.print(f"building {name}'s image if needed (the first time takes a while) ...")
                build_benchmark_image(name, connect(), settings.image_cache_dir, progress=lambda _line: None)
            benchmark = get_benchmark(name, **options)
        except (BenchmarkError, SandboxError) as exc:
            raise CliError(str(exc)) from exc
    backend = get_backend(settings.sandbox_backend, owner="bench-check")
    total = len(benchmark.tasks())
    with _progress() as bar:
        job = bar.add_task(f"checking {name}", total=total)
        results = check_benchmark(
            benchmark, backend, image, timeout, progress=lambda *_: bar.advance(job), workers=workers
        )
    passing_stubs = [r for r in results if r.starting_code_passes]
    bad = [r for r in results if not r.ok and not r.starting_code_passes]
    if cli.as_json:
        cli.emit_json([r.model_dump(mode="json", exclude={"gold", "empty"}) for r in results])
    else:
        table = Table(
            "task", "gold resolves", "empty does not", "note", title=f"{name}: {len(results)} tasks"
        )
        for r in results:
            note = "; ".join(r.problems + r.warnings)
            table.add_row(r.instance_id, _mark(r.gold_resolves), _mark(not r.empty_resolves), note[:80])
        cli.console.print(table)
    if passing_stubs:
        cli.console.print(
            f"[yellow]{len(passing_stubs)} task(s) already pass as shipped (nothing to solve): "
            f"{', '.join(r.instance_id for r in passing_stubs)}[/yellow]"
        )
    if bad:
        cli.console.print(f"[red]{len(bad)} of {len(results)} tasks failed the check[/red]")
        raise typer.Exit(1)
    good = len(results) - len(passing_stubs)
    cli.console.print(f"[green]{good} of {len(results)} tasks: gold resolves, empty does not[/green]")


def parse_options(pairs: list[str]) -> dict[str, Any]:
    """`KEY=VALUE` pairs as benchmark options: VALUE as JSON when it is, else a list when it
    has a comma (empty items dropped), else the string."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CliError(f"--option {pair!r}: expected KEY=VALUE")
        try:
            options[key] = json.loads(value)
        except ValueError:
            options[key] = [item for item in value.split(",") if item] if "," in value else value
    return options


def _mark(ok: bool) -> str:
    return "[green]yes[/green]" if ok else "[red]NO[/red]"


@app.command("run")
def run(
    ctx: typer.Context,
    name: str,
    agent: Annotated[str, typer.Option(help="Agent id to score")],
    subset: Annotated[str | None, typer.Option(help="Named subset [default: all tasks]")] = None,
    model: Annotated[str, typer.Option(help="Model the agent solves with")] = "scripted",
) -> None:
    """Score one agent on a benchmark outside any evolution (an evaluation-only run)."""
    cli: CliContext = ctx.obj
    config: dict[str, Any] = {
        "name": f"bench {name} {agent[:12]}",
        "seed_agent": agent,
        "benchmark": {"name": name},
        "stages": [{"subset": subset}] if subset else [{}],
        "models": {"solve": model, "improve": model, "diagnose": model},
        "budget": {"max_children": 0},
    }
    with reported_errors():
        client = cli.client()
        started = client.post("/api/runs", json=config)
        run_id, total = started["id"], len(started["stage_tasks"][0])
        with _progress() as bar:
            job = bar.add_task(f"{name}: agent {agent[:12]}", total=total)
            while True:
                state = client.get(f"/api/runs/{run_id}")
                evaluations = _evaluations(client.get(f"/api/agents/{agent}"), run_id)
                bar.update(job, completed=sum(1 for e in evaluations if e["status"] == "done"))
                if state["status"] != "running":
                    break
                time.sleep(1)
        if state["status"] != "completed":
            raise CliError(f"run {run_id} ended {state['status']}: {state['stop_reason']}")
    resolved = sum(1 for e in evaluations if e["resolved"])
    if cli.as_json:
        cli.emit_json({"run_id": run_id, "resolved": resolved, "total": total, "evaluations": evaluations})
        return
    table = Table("task", "resolved", "cost", "tokens", title=f"{name}: agent {agent[:12]} (run {run_id})")
    for e in evaluations:
        tokens = e["prompt_tokens"] + e["completion_tokens"]
        table.add_row(e["task_id"], _mark(bool(e["resolved"])), fmt_usd(e["cost_usd"]), str(tokens))
    cli.console.print(table)
    cli.console.print(f"resolved {resolved}/{total} = {fmt_score(resolved / total if total else None)}")


def _evaluations(agent: dict[str, Any], run_id: str) -> list[dict[str, Any]]:
    in_run = next((r for r in agent["runs"] if r["run_id"] == run_id), None)
    return list(in_run["evaluations"]) if in_run else []
