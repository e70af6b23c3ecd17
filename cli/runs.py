"""`clade run ...`: start, list, show, steer and watch runs."""

from __future__ import annotations

import json
import tarfile
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from cli.client import CliError, api_path
from cli.config_file import ConfigFileError, load_config_file
from cli.context import CliContext
from cli.events import describe_event
from cli.output import RUN_COLUMNS, fmt_heldout, fmt_interval, reported_errors, run_row, short, warn

app = typer.Typer(no_args_is_help=True)


@app.command("start")
def start(
    ctx: typer.Context,
    config: Annotated[Path, typer.Argument(help="Run config (YAML or JSON)")],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the plan and a cost and time estimate; start nothing")
    ] = False,
) -> None:
    """Start a run from a configuration file."""
    cli: CliContext = ctx.obj
    with reported_errors():
        body = _read_config(config)
        if dry_run:
            planned = cli.client().post(api_path("/api/runs/plan"), json=body)
        else:
            run = cli.client().post(api_path("/api/runs"), json=body)
    if dry_run:
        if cli.as_json:
            cli.emit_json(planned)
        else:
            print_plan(cli, planned)
        return
    if cli.as_json:
        cli.emit_json(run)
        return
    cli.console.print(f"started run [bold]{run['id']}[/bold] ({run['name']})")
    cli.console.print(f"watch it with: clade run watch {run['id']}")


def print_plan(cli: CliContext, plan: dict[str, Any]) -> None:
    """The plan as a person checks it before spending: stages, selection, limits, budget, estimate."""
    out = cli.console.print
    budget, limits, estimate = plan["budget"], plan["limits"], plan["estimate"]
    out(
        f"dry run: nothing started. Run [bold]{escape(plan['name'])}[/bold] on {plan['benchmark']['name']},"
        f" seed {short(plan['seed_agent'])}"
    )
    table = Table("stage", "tasks", "threshold", title="stages")
    for stage in plan["stages"]:
        table.add_row(str(stage["index"]), str(stage["tasks"]), f"{stage['threshold']:.2f}")
    out(table)
    selection = plan["selection"]
    params = ", ".join(f"{k}={v}" for k, v in selection["params"].items())
    improver = plan["improver"]["mode"] + (
        f" {short(plan['improver']['agent'])}" if plan["improver"]["agent"] else ""
    )
    models = ", ".join(f"{k} {v}" for k, v in plan["models"].items())
    out(
        f"selection: {selection['strategy']}{f' ({params})' if params else ''};"
        f" improver: {improver}; models: {models}"
    )
    hard = plan["time_limits"]
    out(
        f"limits: solve {limits['solve_timeout_s']}s, improve {limits['improve_timeout_s']}s,"
        f" tests {limits['test_timeout_s']}s, {limits['memory_mb']} MB, {limits['cpus']} CPUs;"
        f" jobs killed after {hard['improve_s']}s (improve) and {hard['evaluate_s']}s (evaluate)"
    )
    out(
        f"budget: {budget['max_children']} children, {_money(budget['max_usd'])},"
        f" {_count(budget['max_tokens'])} tokens, {_duration(budget['max_wall_time_s'])} wall time;"
        f" parallelism {plan['parallelism']}"
    )
    if quarantine := quarantine_line(plan.get("quarantine")):
        out(quarantine, highlight=False, markup=False)
    upper = estimate["upper_bound"]
    out(
        f"upper bound: {estimate['evaluations_max']} evaluations,"
        f" {estimate['improve_jobs_max']} improve jobs;"
        f" cost {_money(upper['usd'])}, {_count(upper['tokens'])} tokens, {_duration(upper['wall_time_s'])}"
    )
    expected = estimate["expected"]
    if expected is None:
        out(f"expected: no estimate ({escape(estimate['no_history'] or '')})")
    else:
        out(
            f"expected: {_money(expected['usd'])}, {_count(expected['tokens'])} tokens,"
            f" {_duration(expected['wall_time_s'])} for about {expected['evaluations']} evaluations"
            f" (from {escape(expected['basis'])})"
        )


def quarantine_line(quarantine: dict[str, Any] | None) -> str | None:
    """What the run does with its quarantined tasks (its `quarantine`, as stored), or None."""
    if quarantine is None:
        return None
    ids = quarantine["tasks"]
    shown = ", ".join(ids[:20]) + (f" and {len(ids) - 20} more" if len(ids) > 20 else "")
    source = f" (from {quarantine['file']})" if quarantine.get("file") else ""
    if quarantine["include"]:
        return f"quarantined tasks{source}: {len(ids)}, kept in the pool (quarantine.include): {shown}"
    return (
        f"quarantined tasks{source}: {len(ids)} kept out of every stage and held-out set: {shown or 'none'}"
    )


def _money(usd: float | None) -> str:
    return "no cost limit" if usd is None else f"${usd:,.2f}"


def _count(tokens: int | None) -> str:
    return "unlimited" if tokens is None else f"{tokens:,}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "unlimited"
    minutes = round(seconds / 60)
    return f"{seconds:.0f}s" if seconds < 120 else f"{minutes // 60}h {minutes % 60:02d}m"


def _read_config(path: Path) -> Any:
    try:
        data = load_config_file(path)
    except ConfigFileError as exc:
        raise CliError(str(exc)) from exc
    if not isinstance(data, dict):
        raise CliError(f"{path}: a run configuration must be a mapping")
    return data


@app.command("list")
def list_runs(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option(min=1, max=1000)] = 50,
    offset: Annotated[int, typer.Option(min=0)] = 0,
) -> None:
    """List runs, newest first."""
    cli: CliContext = ctx.obj
    with reported_errors():
        page = cli.client().get(api_path("/api/runs"), limit=limit, offset=offset)
    if cli.as_json:
        cli.emit_json(page)
        return
    table = Table(*RUN_COLUMNS, title=f"runs ({page['total']} in all)")
    for run in page["items"]:
        table.add_row(*run_row(run))
    cli.console.print(table)


@app.command("show")
def show(ctx: typer.Context, run_id: str) -> None:
    """Show one run: status, budget, progress and its best agents."""
    cli: CliContext = ctx.obj
    with reported_errors():
        client = cli.client()
        run = client.get(api_path("/api/runs/{run_id}", run_id=run_id))
        agents = client.get(api_path("/api/runs/{run_id}/agents", run_id=run_id), limit=10)
    if cli.as_json:
        cli.emit_json({"run": run, "top_agents": agents})
        return
    table = Table(*RUN_COLUMNS)
    table.add_row(*run_row(run))
    cli.console.print(table)
    if run["stop_reason"]:
        cli.console.print(f"stopped: {run['stop_reason']}")
    if quarantine := quarantine_line(run["config"].get("quarantine")):
        cli.console.print(quarantine, highlight=False, markup=False)
    if len(run.get("epochs", [])) > 1:  # versioned utilities: scores count in their epoch only
        cli.console.print(f"utility: epoch {run['epoch']} of {len(run['epochs']) - 1}")
    reused = run["progress"].get("evaluations_reused")
    if reused:
        cli.console.print(f"evaluations reused (identical code, same task): {reused}")
    print_agents(cli, agents["items"], title=f"top agents ({agents['total']} in the archive)")


@app.command("experience")
def show_experience(
    ctx: typer.Context,
    run_id: str,
    version: Annotated[int | None, typer.Option(help="A version of the pool (default: the latest)")] = None,
) -> None:
    """Show a group run's experience pool, as its improve jobs received it."""
    cli: CliContext = ctx.obj
    with reported_errors():
        params = {} if version is None else {"version": version}
        pool = cli.client().get(api_path("/api/runs/{run_id}/experience", run_id=run_id), **params)
    if cli.as_json:
        cli.emit_json(pool)
        return
    cli.console.print(f"experience pool version {pool['version']} ({pool['finished_steps']} finished steps)")
    cli.console.print(escape(pool["text"]))


def print_agents(cli: CliContext, agents: list[dict[str, Any]], title: str) -> None:
    table = Table("agent", "parent", "status", "score", "held-out", "children", "step", "reason", title=title)
    for agent in agents:
        table.add_row(
            short(agent["id"]),
            short(agent["parent_id"]),
            agent["status"],
            fmt_interval(agent["score"], agent.get("score_low"), agent.get("score_high")),
            fmt_heldout(agent),
            str(agent["children"]),
            "-" if agent["step"] is None else str(agent["step"]),
            escape((agent["reason"] or "")[:60]),
        )
    cli.console.print(table)


def _steer(action: str) -> None:
    def command(ctx: typer.Context, run_id: str) -> None:
        cli: CliContext = ctx.obj
        with reported_errors():
            run = cli.client().post(api_path(f"/api/runs/{{run_id}}/{action}", run_id=run_id))
        if cli.as_json:
            cli.emit_json(run)
        else:
            cli.console.print(f"run {run['id']} is now [bold]{run['status']}[/bold]")

    command.__doc__ = f"{action.title()} a run."
    app.command(action)(command)


for _action in ("pause", "resume", "cancel"):
    _steer(_action)


@app.command("export")
def export(
    ctx: typer.Context,
    run_id: str,
    out: Annotated[Path, typer.Option("--out", "-o", help="File to write")],
    k: Annotated[int, typer.Option(min=1, max=100, help="How many of the best agents")] = 5,
) -> None:
    """The run's best agents as one tar.gz (code and metadata.json each), best first: by held-out
    lower bound when the run scored a held-out set, else by selection score."""
    cli: CliContext = ctx.obj
    with reported_errors():
        size = cli.client().download_to(api_path("/api/runs/{run_id}/export", run_id=run_id), out, k=k)
    if _no_members(out):
        warn(f"{out} holds no agents: run {run_id} has admitted none yet (only scored agents rank)")
    if cli.as_json:
        cli.emit_json({"run_id": run_id, "out": str(out), "bytes": size})
    else:
        cli.console.print(f"wrote {out} ({size} bytes)")


def _no_members(archive: Path) -> bool:
    """Whether the tar.gz at `archive` holds nothing (a file that does not read holds something)."""
    try:
        with tarfile.open(archive, "r:gz") as tar:
            return tar.next() is None
    except (tarfile.TarError, OSError, EOFError):
        return False


@app.command("watch")
def watch(
    ctx: typer.Context,
    run_id: str,
    interval: Annotated[float, typer.Option(help="Seconds between polls")] = 1.0,
) -> None:
    """Follow a run's events until it finishes (Ctrl-C to stop watching)."""
    cli: CliContext = ctx.obj
    last = 0
    with reported_errors():
        client = cli.client()
        while True:
            for event in client.get(api_path("/api/runs/{run_id}/events", run_id=run_id), after=last):
                last = event["id"]
                if cli.as_json:
                    print(json.dumps(event))
                else:
                    cli.console.print(describe_event(event))
            run = client.get(api_path("/api/runs/{run_id}", run_id=run_id))
            if run["status"] in ("completed", "cancelled", "failed"):
                if not cli.as_json:
                    cli.console.print(f"run {run['status']}: {run['stop_reason'] or ''}")
                return
            time.sleep(interval)
