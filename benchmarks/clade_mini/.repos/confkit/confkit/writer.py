"""Writing a Config as INI text."""

from __future__ import annotations

from pathlib import Path

from confkit.config import Config


def dumps(config: Config) -> str:
    """INI text that `loads` reads back as an equal Config."""
    lines: list[str] = []
    for section in config.sections():
        if lines:
            lines.append("")
        lines.append(f"[{section}]")
        for key in config.keys(section):
            lines.append(f"{key} = {_format(config.get(section, key))}")
    return "\n".join(lines) + "\n" if lines else ""


def dump(config: Config, path: str | Path) -> None:
    Path(path).write_text(dumps(config), encoding="utf-8")


def _format(value: str) -> str:
    return value
