"""Every option's help reaches `--help` whole: rich reads `[...]` as markup and drops it, so a
hint such as "[env: CLADE_SERVICE_URL]" once vanished from the screen without a trace."""

from __future__ import annotations

from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from cli.main import app


# Typer builds on its own copy of click, so commands are told apart by what they hold.
def _commands(group: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    found = [(path, group)]
    for name, command in sorted(getattr(group, "commands", {}).items()):
        found += _commands(command, (*path, name))
    return found


COMMANDS = _commands(typer.main.get_command(app))
# The walk reaches nested commands too (a guard against it finding only the top).
assert {("sim",), ("agent", "diff"), ("db", "upgrade")} <= {p for p, _ in COMMANDS}


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[" ".join(p) or "clade" for p, _ in COMMANDS])
def test_every_option_help_is_shown_whole(path: tuple[str, ...], command: Any) -> None:
    # Wide enough that no help line wraps, so each text can be found as it was written.
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "2000"}, terminal_width=2000)
    assert result.exit_code == 0, result.output
    shown = " ".join(result.output.split())
    for param in command.params:
        text = getattr(param, "help", None)
        if text and not getattr(param, "hidden", False):
            # `\\[` is how a help text asks rich for a literal bracket.
            assert " ".join(text.replace("\\[", "[").split()) in shown, (
                f"{' '.join(path)} --{param.name}: {text!r}"
            )
