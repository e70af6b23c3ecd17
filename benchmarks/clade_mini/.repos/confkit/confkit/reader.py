"""Reading INI text into a Config."""

from __future__ import annotations

import re
from pathlib import Path

from confkit.config import Config
from confkit.errors import ConfigError

_INLINE_COMMENT = re.compile(r"\s[#;].*$")


def loads(text: str) -> Config:
    """Parse INI text (see README.md for the syntax)."""
    config = Config()
    section: str | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            if not line.endswith("]") or not line[1:-1].strip():
                raise ConfigError(f"bad section header {line!r}", number)
            section = line[1:-1].strip()
            config.add_section(section)
            continue
        if section is None:
            raise ConfigError("a key before the first section", number)
        parts = line.split("=")
        key, value = parts[0].strip(), parts[1]
        if not key:
            raise ConfigError("a value without a key", number)
        config.set(section, key, _value(value))
    return config


def load(path: str | Path) -> Config:
    return loads(Path(path).read_text(encoding="utf-8"))


def _value(text: str) -> str:
    """The value part of a `key = value` line, without its inline comment."""
    return _INLINE_COMMENT.sub("", text.strip()).strip()
