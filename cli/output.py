"""Shared printing helpers: tables for people, JSON for scripts, errors on stderr."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.console import Console

from cli.client import CliError

err_console = Console(stderr=True)


@contextmanager
def reported_errors() -> Iterator[None]:
    """Turn a CliError into one red line and exit code 1."""
    try:
        yield
    except CliError as exc:
        err_console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from exc


def fmt_score(score: float | None) -> str:
    return "-" if score is None else f"{score:.2f}"


def fmt_usd(usd: float | None) -> str:
    return "-" if usd is None else f"${usd:.4f}"


def short(sha: str | None) -> str:
    return "-" if sha is None else sha[:12]


def run_row(run: dict[str, Any]) -> list[str]:
    progress, budget = run["progress"], run["budget"]
    return [
        run["id"][:12],
        run["name"],
        run["status"],
        f"{progress['children']}/{budget['max_children']}",
        fmt_usd(progress["usd"]),
        str(progress["tokens"]),
        fmt_score(progress["best_score"]),
        short(progress["best_agent_id"]),
    ]


RUN_COLUMNS = ["id", "name", "status", "children", "cost", "tokens", "best", "best agent"]

Printer = Callable[[Any], None]
