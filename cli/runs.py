"""`clade run ...`: start, list, show, steer and watch runs."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from rich.markup import escape
from rich.table import Table

from cli.client import CliError
from cli.context import CliContext
from cli.output import RUN_COLUMNS, fmt_score, reported_errors, run_row, short

app = typer.Typer(no_args_is_help=True)


@app.command("start")
def start(
    ctx: typer.Context, config: Annotated[Path, typer.Argument(help="Run config (YAML or JSON)")]
) -> None:
    """Start a run from a configuration file."""
    cli: CliContext = ctx.obj
    with reported_errors():
        body = _read_config(config)
        run = cli.client().post("/api/runs", json=body)
    if cli.as_json:
        cli.emit_json(run)
        return
    cli.console.print(f"started run [bold]{run['id']}[/bold] ({run['name']})")
    cli.console.print(f"watch it with: clade run watch {run['id']}")


def _read_config(path: Path) -> Any:
    if not path.is_file():
        raise CliError(f"{path}: no such file")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise CliError(f"{path}: not valid YAML: {exc}") from exc
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
        page = cli.client().get("/api/runs", limit=limit, offset=offset)
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
        run = client.get(f"/api/runs/{run_id}")
        agents = client.get(f"/api/runs/{run_id}/agents", limit=10)
    if cli.as_json:
        cli.emit_json({"run": run, "top_agents": agents})
        return
    table = Table(*RUN_COLUMNS)
    table.add_row(*run_row(run))
    cli.console.print(table)
    if run["stop_reason"]:
        cli.console.print(f"stopped: {run['stop_reason']}")
    print_agents(cli, agents["items"], title=f"top agents ({agents['total']} in the archive)")


def print_agents(cli: CliContext, agents: list[dict[str, Any]], title: str) -> None:
    table = Table("agent", "parent", "status", "score", "children", "step", "reason", title=title)
    for agent in agents:
        table.add_row(
            short(agent["id"]),
            short(agent["parent_id"]),
            agent["status"],
            fmt_score(agent["score"]),
            str(agent["children"]),
            "-" if agent["step"] is None else str(agent["step"]),
            (agent["reason"] or "")[:60],
        )
    cli.console.print(table)


def _steer(action: str) -> None:
    def command(ctx: typer.Context, run_id: str) -> None:
        cli: CliContext = ctx.obj
        with reported_errors():
            run = cli.client().post(f"/api/runs/{run_id}/{action}")
        if cli.as_json:
            cli.emit_json(run)
        else:
            cli.console.print(f"run {run['id']} is now [bold]{run['status']}[/bold]")

    command.__doc__ = f"{action.title()} a run."
    app.command(action)(command)


for _action in ("pause", "resume", "cancel"):
    _steer(_action)


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
            for event in client.get(f"/api/runs/{run_id}/events", after=last):
                last = event["id"]
                if cli.as_json:
                    print(json.dumps(event))
                else:
                    cli.console.print(describe_event(event))
            run = client.get(f"/api/runs/{run_id}")
            if run["status"] in ("completed", "cancelled", "failed"):
                if not cli.as_json:
                    cli.console.print(f"run {run['status']}: {run['stop_reason'] or ''}")
                return
            time.sleep(interval)


def describe_event(event: dict[str, Any]) -> str:
    p = event["payload"]
    kind = event["kind"]
    stamp = event["created_at"][11:19]
    if kind == "child_created":
        child, parent = short(p.get("agent_id")), short(p.get("parent_id"))
        return f"{stamp} step {p.get('step')}: child {child} of {parent}"
    if kind == "evaluation_done" and p.get("infrastructure_failure"):
        cause = escape(str(p["infrastructure_failure"]))
        agent = short(p.get("agent_id"))
        return f"{stamp}   {agent} on {p.get('task_id')}: [yellow]not run: {cause}[/yellow]"
    if kind == "evaluation_done":
        mark = "[green]resolved[/green]" if p.get("resolved") else "[red]unresolved[/red]"
        return f"{stamp}   {short(p.get('agent_id'))} on {p.get('task_id')}: {mark}"
    if kind == "driver_error":
        cause = escape(str(p.get("error")))
        return f"{stamp} [yellow]run driver failed ({p.get('failed_ticks', 1)} ticks): {cause}[/yellow]"
    if kind in ("agent_admitted", "agent_rejected"):
        verdict = "admitted" if kind == "agent_admitted" else "rejected"
        extra = f" score {fmt_score(p.get('score'))}" if p.get("score") is not None else ""
        reason = f" ({p['reason']})" if p.get("reason") else ""
        return f"{stamp} agent {short(p.get('agent_id'))} {verdict}{extra}{reason}"
    return f"{stamp} {kind} {json.dumps(p)}"
