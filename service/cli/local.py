"""Commands that run processes on this machine: the service, migrations."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlparse

import typer

from service.settings import get_settings

db_app = typer.Typer(no_args_is_help=True)


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Apply database migrations (the service also does this when it starts)."""
    from service.db.migrate import upgrade

    settings = get_settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    upgrade(settings.resolved_database_url)
    typer.echo(f"database at {settings.resolved_database_url} is up to date")


def serve(
    host: Annotated[str | None, typer.Option(help="Bind address [default: from CLADE_SERVICE_URL]")] = None,
    port: Annotated[int | None, typer.Option(help="Port [default: from CLADE_SERVICE_URL]")] = None,
) -> None:
    """Run the service: REST API, archive and run driver."""
    import uvicorn

    from service.api.app import create_app

    settings = get_settings()
    where = urlparse(settings.service_url)
    app = create_app(settings)
    uvicorn.run(app, host=host or where.hostname or "127.0.0.1", port=port or where.port or 8420)


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
