"""Shared printing helpers: tables for people, JSON for scripts, errors on stderr."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from cli.client import CliError
from contracts.intervals import wilson

# Control characters but line breaks and tabs (C0, DEL, C1), and the bidirectional overrides that
# reorder what is shown ("Trojan Source").
_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """`text` with each control character shown as an escape (ESC as `\\x1b`). What the CLI prints
    holds what agents wrote (a rejection's reason, a diff, a name): a terminal escape in it must
    not clear the user's screen, retitle the window or write to the clipboard."""
    return _HIDDEN.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", text)


class SafeConsole(Console):
    """A Rich console that shows control characters in the text it is given as escapes (`visible`);
    its own styling still reaches the terminal."""

    def render_str(self, text: str, **options: Any) -> Text:
        return super().render_str(visible(text), **options)


err_console = SafeConsole(stderr=True)


@contextmanager
def reported_errors() -> Iterator[None]:
    """Turn a CliError into one red line and its exit code (1; 2 for a usage error). The message
    is Text, not markup (it holds what the user typed: a file name `[/x].yaml`, a value `[a, b]`),
    and is never broken into several lines at the console's width."""
    try:
        yield
    except CliError as exc:
        message = visible(str(exc))
        err_console.print(Text.assemble(("error:", "red"), " ", message), highlight=False, soft_wrap=True)
        raise typer.Exit(exc.exit_code) from exc


def warn(message: str) -> None:
    """One yellow `warning:` line on stderr, for a command that did what it was asked but the
    result is likely not what was meant (an empty export)."""
    shown = visible(message)
    err_console.print(Text.assemble(("warning:", "yellow"), " ", shown), highlight=False, soft_wrap=True)


def fmt_score(score: float | None) -> str:
    return "-" if score is None else f"{score:.2f}"


def fmt_interval(score: float | None, low: float | None, high: float | None) -> str:
    """A score with its 95% interval, `0.60 [0.23, 0.88]`: 3 of 5 is not exactly 0.6."""
    if score is None or low is None or high is None:
        return fmt_score(score)
    return f"{score:.2f} [{low:.2f}, {high:.2f}]"


def fmt_best(progress: dict[str, Any], *, heldout: bool = False) -> str:
    """A run's best score with its interval: on the selection tasks, or on the held-out ones."""
    score, low, high = (
        ("best_heldout_score", "best_heldout_low", "best_heldout_high")
        if heldout
        else (
            "best_score",
            "best_score_low",
            "best_score_high",
        )
    )
    return fmt_interval(progress.get(score), progress.get(low), progress.get(high))


def fmt_heldout(row: dict[str, Any]) -> str:
    """An agent's held-out fraction with the interval the service gives it (one that holds for
    every agent its run compared on the held-out tasks), or `-`."""
    resolved, total = row.get("heldout_resolved"), row.get("heldout_total")
    if resolved is None or not total:
        return "-"
    return fmt_interval(resolved / total, row.get("heldout_low"), row.get("heldout_high"))


def fmt_counts(resolved: int | None, total: int | None) -> str:
    """`resolved/total` as a fraction with its Wilson interval, or `-`."""
    if resolved is None or not total:
        return "-"
    return fmt_interval(resolved / total, *wilson(resolved, total))


def fmt_usd(usd: float | None) -> str:
    return "-" if usd is None else f"${usd:.4f}"


def short(sha: str | None) -> str:
    return "-" if sha is None else sha[:12]


def run_row(run: dict[str, Any]) -> list[str]:
    progress, budget = run["progress"], run["budget"]
    return [
        run["id"][:12],
        escape(run["name"]),
        run["status"],
        f"{progress['children']}/{budget['max_children']}",
        fmt_usd(progress["usd"]),
        str(progress["tokens"]),
        fmt_best(progress),
        fmt_best(progress, heldout=True),
        short(progress["best_agent_id"]),
    ]


# "best" is the best agent's score on the selection tasks, "held-out" on the held-out tasks (if any).
RUN_COLUMNS = ["id", "name", "status", "children", "cost", "tokens", "best", "held-out", "best agent"]

Printer = Callable[[Any], None]
