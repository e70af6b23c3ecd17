"""`clade`: the command line. Global options choose the service and the output format."""

from __future__ import annotations

from typing import Annotated

import typer

from cli import agents, bench, doctor, local, maintenance, runs, seeds, sim, worker_tokens
from cli.context import CliContext, resolve_token
from cli.output import SafeConsole
from contracts.settings import Settings

app = typer.Typer(
    help="Clade: an evolutionary archive of self-improving coding agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(seeds.app, name="seed", help="Import seed agents.")
app.add_typer(runs.app, name="run", help="Start, inspect and steer evolution runs.")
app.add_typer(agents.app, name="agent", help="Inspect and export agents.")
app.add_typer(bench.app, name="bench", help="Benchmarks: list, check, score one agent.")
app.add_typer(worker_tokens.app, name="worker-token", help="Issue, list and revoke worker tokens.")
app.add_typer(local.db_app, name="db", help="Database maintenance.")
local.register(app)
maintenance.register(app)
app.command("doctor")(doctor.doctor)
app.command("sim")(sim.sim)


@app.callback()
def main(
    ctx: typer.Context,
    url: Annotated[
        str | None, typer.Option(help="Service URL (env CLADE_SERVICE_URL)", show_default=False)
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(help="Admin token (env CLADE_ADMIN_TOKEN; default: the local data dir's)"),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    settings = Settings()
    resolved, token_option = resolve_token(token, settings)
    ctx.obj = CliContext(
        url=url or settings.service_url,
        token=resolved,
        as_json=as_json,
        console=SafeConsole(),
        url_option="--url" if url else "CLADE_SERVICE_URL",
        token_option=token_option,
    )


if __name__ == "__main__":
    app()
