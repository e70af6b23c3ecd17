"""Overriding configuration values from environment variables."""

from __future__ import annotations

from collections.abc import Mapping

from confkit.config import Config


def apply_env(config: Config, environ: Mapping[str, str], prefix: str = "APP") -> list[tuple[str, str]]:
    """Set values from variables named PREFIX_SECTION__KEY; return the (section, key) pairs set.

    Two underscores separate the section from the key, and both are
    lower-cased: APP_DATABASE__POOL_SIZE=10 sets `pool_size` in [database].
    Variables without the prefix or without the two underscores are ignored.
    """
    start = f"{prefix.upper()}_"
    applied: list[tuple[str, str]] = []
    for name, value in environ.items():
        if not name.startswith(start) or "__" not in name:
            continue
        section, _, key = name[len(start) :].partition("_")
        section, key = section.lower(), key.lstrip("_").lower()
        if not section or not key:
            continue
        config.set(section, key, value)
        applied.append((section, key))
    return sorted(applied)
