"""`clade seed import PATH`: upload a folder or a git repository as a seed agent."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path
from typing import Annotated

import typer

from cli.client import CliError, api_path
from cli.context import CliContext
from cli.output import reported_errors

app = typer.Typer(no_args_is_help=True)


def pack_agent(path: Path) -> bytes:
    """A git repository is packed at HEAD (committed files only); a folder as it is, minus .git."""
    if not path.is_dir():
        raise CliError(f"{path}: not a folder")
    if (path / ".git").exists():
        result = subprocess.run(
            ["git", "-C", str(path), "archive", "--format=tar", "HEAD"], capture_output=True
        )
        if result.returncode != 0:
            raise CliError(f"{path}: git archive HEAD failed: {result.stderr.decode().strip()}")
        return result.stdout
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(path, arcname=".", filter=lambda info: None if "/.git" in f"/{info.name}/" else info)
    return buffer.getvalue()


@app.command("import")
def import_seed(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="Agent folder or git repository (agent.toml at its root)")],
    name: Annotated[str | None, typer.Option(help="Name shown for the seed")] = None,
) -> None:
    """Import a seed agent; prints its id (the commit sha)."""
    cli: CliContext = ctx.obj
    with reported_errors():
        data = pack_agent(path)
        agent = cli.client().post(
            api_path("/api/seeds"),
            files={"file": ("agent.tar", data, "application/x-tar")},
            data={"name": name or path.resolve().name},
        )
    if cli.as_json:
        cli.emit_json(agent)
    else:
        cli.console.print(f"seed [bold]{agent['name']}[/bold] imported: {agent['id']}")
