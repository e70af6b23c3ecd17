"""Making a benchmark folder hostile, for the loaders' refusal tests."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.servers import AppService
from tests.service.helpers import config


def replace(path: Path, make: Callable[[Path], object]) -> None:
    """Put what `make` makes (a link, a FIFO, a folder) where `path` is."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
    make(path)


def sparse(path: Path, size: int) -> None:
    """A file of `size` bytes that takes no disk (a sparse file, as `truncate -s` makes)."""
    with path.open("wb") as handle:
        handle.truncate(size)


def link_to(target: str) -> Callable[[Path], None]:
    return lambda path: path.symlink_to(target)


def plan_refusal(service: AppService, seed_id: str, benchmark: str, options: dict[str, Any]) -> str:
    """What `POST /api/runs/plan` of a run on `benchmark` with `options` refuses: its one 422
    problem, which must stand at `benchmark.options`; its message."""
    body = config(seed_id) | {"benchmark": {"name": benchmark, "options": options}}
    body["stages"] = [{"subset": "all"}]
    with service.admin as admin:
        answer = admin.post("/api/runs/plan", json=body)
    assert answer.status_code == 422, answer.text
    [problem] = answer.json()["detail"]
    assert problem["loc"] == ["body", "benchmark", "options"]
    return str(problem["msg"])
