"""`clade agent ...`: show, diff and export agents."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from cli.client import UsageError, api_path
from cli.context import CliContext
from cli.output import fmt_heldout, fmt_interval, fmt_usd, reported_errors, short, visible, warn
from cli.transfer import transfer

app = typer.Typer(no_args_is_help=True)
app.command("transfer")(transfer)

FORMATS = {"tar.gz": "export", "bundle": "bundle", "patches": "patches", "code": "code"}


@app.command("show")
def show(ctx: typer.Context, agent_id: str) -> None:
    """An agent's lineage, and its scores in each run."""
    cli: CliContext = ctx.obj
    with reported_errors():
        agent = cli.client().get(api_path("/api/agents/{agent_id}", agent_id=agent_id))
    if cli.as_json:
        cli.emit_json(agent)
        return
    cli.console.print(f"agent [bold]{agent['id']}[/bold] ({agent['kind']})")
    cli.console.print("lineage: " + " -> ".join(short(a) for a in agent["lineage"]))
    if agent.get("second_parent_id"):  # a crossover child: a merge of two parents
        cli.console.print(f"merged with: {short(agent['second_parent_id'])} (second parent)")
    table = Table("run", "status", "score", "held-out", "stages", "cost", "reason")
    for run in agent["runs"]:
        # Stages of later epochs (utility versions) carry their epoch: "e1:2/5".
        stages = " ".join(
            f"{'e' + str(s['epoch']) + ':' if s.get('epoch') else ''}{s['resolved']}/{s['total']}"
            for s in run["stages"]
        )
        table.add_row(
            run["run_id"],
            run["status"],
            fmt_interval(run["score"], run.get("score_low"), run.get("score_high")),
            fmt_heldout(run),
            stages,
            fmt_usd(run["usd"]),
            escape((run["reason"] or "")[:60]),
        )
    cli.console.print(table)


@app.command("diff")
def diff(ctx: typer.Context, agent_id: str) -> None:
    """The agent's change against its parent."""
    cli: CliContext = ctx.obj
    with reported_errors():
        patch = cli.client().download(api_path("/api/agents/{agent_id}/diff", agent_id=agent_id))
    if sys.stdout.isatty():  # the agent's escapes are shown, not obeyed
        print(visible(patch.decode(errors="replace")), end="")
    else:  # byte for byte into a file or a pipe (`git apply`)
        sys.stdout.flush()
        sys.stdout.buffer.write(patch)
        sys.stdout.buffer.flush()


@app.command("export")
def export(
    ctx: typer.Context,
    agent_id: str,
    out: Annotated[Path, typer.Option("--out", "-o", help="File to write")],
    fmt: Annotated[
        str, typer.Option("--format", help="tar.gz (code + metadata.json), bundle, patches or code")
    ] = "tar.gz",
) -> None:
    """Export an agent to a file (a new file, or a regular file it replaces); a failed export
    leaves no file."""
    cli: CliContext = ctx.obj
    with reported_errors():
        if fmt not in FORMATS:
            raise UsageError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
        path = api_path(f"/api/agents/{{agent_id}}/{FORMATS[fmt]}", agent_id=agent_id)
        size = cli.client().download_to(path, out)
    if size == 0 and fmt == "patches":
        # A seed has no parent: its series of patches is empty, and so is the file.
        warn(
            f"{out} is empty: agent {agent_id} has no patches (a seed has no parent);"
            " --format bundle or tar.gz holds its code"
        )
    if cli.as_json:
        cli.emit_json({"agent_id": agent_id, "out": str(out), "bytes": size})
    else:
        cli.console.print(f"wrote {out} ({size} bytes)")
