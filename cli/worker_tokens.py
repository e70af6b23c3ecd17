"""`clade worker-token create NAME | list | revoke ID`: one token per worker machine."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from cli.client import api_path
from cli.context import CliContext
from cli.output import reported_errors

app = typer.Typer(no_args_is_help=True)
PATH = api_path("/api/admin/worker-tokens")


@app.command("create")
def create(
    ctx: typer.Context, name: Annotated[str, typer.Argument(help="Who holds it, e.g. the host name")]
) -> None:
    """Issue a worker token; it is printed this once (the service keeps only its hash)."""
    cli: CliContext = ctx.obj
    with reported_errors():
        issued = cli.client().post(PATH, json={"name": name})
    if cli.as_json:
        cli.emit_json(issued)
        return
    cli.console.print(f"worker token [bold]{issued['id']}[/bold] ({issued['name']}):")
    print(issued["token"])
    cli.console.print("give it to the worker as CLADE_WORKER_TOKEN; it is not shown again")


@app.command("list")
def list_tokens(ctx: typer.Context) -> None:
    """The issued worker tokens, revoked ones too (never the tokens themselves)."""
    cli: CliContext = ctx.obj
    with reported_errors():
        tokens = cli.client().get(PATH)
    if cli.as_json:
        cli.emit_json(tokens)
        return
    table = Table("id", "name", "created", "revoked")
    for token in tokens:
        table.add_row(
            token["id"], escape(token["name"]), str(token["created_at"]), str(token["revoked_at"] or "")
        )
    cli.console.print(table)


@app.command("revoke")
def revoke(ctx: typer.Context, token_id: Annotated[str, typer.Argument(help="The token's id")]) -> None:
    """Refuse the token from now on: its worker's next request gets 401."""
    cli: CliContext = ctx.obj
    with reported_errors():
        revoked = cli.client().delete(api_path(PATH + "/{token_id}", token_id=token_id))
    if cli.as_json:
        cli.emit_json(revoked)
        return
    cli.console.print(f"worker token {revoked['id']} ({revoked['name']}) revoked at {revoked['revoked_at']}")
