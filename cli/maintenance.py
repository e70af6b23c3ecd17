"""`clade backup` and `clade restore`: the archive (git and database) in one file and back.

Both work on the data dir and database of the settings (or the options), not through the
service: a backup is safe while the service runs; a restore goes into an empty target.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cli.client import CliError
from cli.config_file import not_a_file
from cli.context import CliContext
from cli.output import reported_errors
from contracts.settings import Settings

DataDirOption = Annotated[
    Path | None, typer.Option("--data-dir", help="Data dir (env CLADE_DATA_DIR)", show_default=False)
]
DatabaseOption = Annotated[
    str | None,
    typer.Option("--database-url", help="Database (env CLADE_DATABASE_URL; default: SQLite in the data dir)"),
]


def _targets(data_dir: Path | None, database_url: str | None) -> tuple[Path, str]:
    settings = Settings()
    if data_dir is not None:
        settings = settings.model_copy(update={"data_dir": data_dir})
    return settings.data_dir, database_url or settings.resolved_database_url


def backup(
    ctx: typer.Context,
    out: Annotated[Path, typer.Argument(help="The backup file to write")],
    data_dir: DataDirOption = None,
    database_url: DatabaseOption = None,
) -> None:
    """Back up the whole archive (git objects and refs, database rows) into one file, safely
    while the service runs."""
    from service.archive.backup import BackupError, create_backup

    cli: CliContext = ctx.obj
    folder, url = _targets(data_dir, database_url)
    with reported_errors():
        try:
            manifest = create_backup(data_dir=folder, database_url=url, out=out)
        except BackupError as exc:
            raise CliError(str(exc)) from exc
    if cli.as_json:
        cli.emit_json({"file": str(out), "bytes": out.stat().st_size, **manifest.model_dump(mode="json")})
        return
    counts = manifest.counts
    cli.console.print(
        f"backed up {counts.get('agents', 0)} agents, {counts.get('runs', 0)} runs,"
        f" {counts.get('evaluations', 0)} evaluations and {manifest.refs} refs"
        f" (database revision {manifest.alembic_revision}) to {out} ({out.stat().st_size:,} bytes)"
    )


def restore(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="A file written by `clade backup`")],
    data_dir: DataDirOption = None,
    database_url: DatabaseOption = None,
) -> None:
    """Restore a backup into an empty data dir and an empty database (a non-empty one is refused)."""
    from service.archive.backup import BackupError, restore_backup

    cli: CliContext = ctx.obj
    folder, url = _targets(data_dir, database_url)
    with reported_errors():
        if (problem := not_a_file(file)) is not None:
            raise CliError(f"{file}: {problem}")
        try:
            report = restore_backup(backup=file, data_dir=folder, database_url=url)
        except BackupError as exc:
            raise CliError(str(exc)) from exc
        if not report.consistency.consistent:
            raise CliError(
                f"restored, but {len(report.consistency.missing_commits)} agents lack their commit:"
                f" {report.consistency.missing_commits[:3]}"
            )
    if cli.as_json:
        cli.emit_json(report.model_dump(mode="json"))
        return
    counts = report.manifest.counts
    cli.console.print(
        f"restored {counts.get('agents', 0)} agents, {counts.get('runs', 0)} runs and"
        f" {counts.get('evaluations', 0)} evaluations into {folder}; consistency check clean"
        f" ({report.consistency.agents_checked} agents checked). Start the service with `clade serve`."
    )


def register(app: typer.Typer) -> None:
    app.command("backup")(backup)
    app.command("restore")(restore)
