"""Capturing what the root logger writes, formatted as `CLADE_LOG_FORMAT=json` formats it."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from contracts.logs import IdsFilter, JsonFormatter


@contextmanager
def json_log_lines(process: str = "test") -> Iterator[list[dict[str, Any]]]:
    """Every record logged inside, at INFO and above, as a parsed JSON line (filled in on exit)."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(IdsFilter())
    handler.setFormatter(JsonFormatter(process))
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    lines: list[dict[str, Any]] = []
    try:
        yield lines
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
        lines.extend(json.loads(line) for line in stream.getvalue().splitlines())
