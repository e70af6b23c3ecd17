"""Log lines that name the run, step or evaluation they belong to, as text or as JSON lines.

Where work for a run, step or evaluation starts (a driver move, a worker job, a worker endpoint,
an LLM gateway's call) the code enters `log_ids(...)`; `IdsFilter` copies the ids known at the
time of each record onto it, and `JsonFormatter` writes one JSON object a line with them. So
`grep <step id>` over the service's, the workers' and their gateways' logs follows one step.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Literal

LogFormat = Literal["text", "json"]
ID_FIELDS = ("run_id", "step_id", "evaluation_id")
TEXT_FORMAT = "[%(asctime)s: %(levelname)s/%(name)s] %(message)s"

_ids: ContextVar[dict[str, str]] = ContextVar("clade_log_ids")  # each change sets a new dict


def current_ids() -> dict[str, str]:
    """The ids in effect here (a copy): hand them to a thread, which starts with none."""
    return dict(_ids.get({}))


@contextmanager
def log_ids(**ids: str | None) -> Iterator[None]:
    """Records logged inside carry these ids (None ones are left out), besides the outer ones."""
    unknown = set(ids) - set(ID_FIELDS)
    if unknown:
        raise ValueError(f"unknown log ids {sorted(unknown)}; known: {ID_FIELDS}")
    token = _ids.set(_ids.get({}) | {name: value for name, value in ids.items() if value is not None})
    try:
        yield
    finally:
        _ids.reset(token)


class IdsFilter(logging.Filter):
    """Puts the ids in effect on each record (attributes `run_id`, `step_id`, `evaluation_id`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in _ids.get({}).items():
            if getattr(record, name, None) is None:
                setattr(record, name, value)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time (UTC), level, logger, message, the ids known, the traceback."""

    def __init__(self, process: str) -> None:
        super().__init__()
        self.process = process

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "process": self.process,
            "pid": record.process,
            "message": record.getMessage(),
        }
        for name in ID_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                line[name] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def configure_logging(log_format: LogFormat, *, process: str, level: int = logging.INFO) -> None:
    """The root logger's one handler (stderr): the usual text lines, or JSON lines with the ids."""
    handler = logging.StreamHandler()
    handler.addFilter(IdsFilter())
    if log_format == "json":
        handler.setFormatter(JsonFormatter(process))
        logging.captureWarnings(True)  # warnings too, as lines of the "py.warnings" logger
    else:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
