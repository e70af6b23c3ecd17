"""Every image a run on a benchmark will need, made ahead of time (`clade bench prepare`).

Clade's base image and the agent runtime made from it (built locally), then each task's
own image (SWE-bench: the instance images), used as they are when the engine has them
and pulled otherwise. A task image that cannot be had is reported, and the rest go on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from benchmarks.base import Benchmark
from sandbox.base import SandboxUnavailable

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Prepared:
    """One image (or the runtime folder) and what preparing it took."""

    name: str
    kind: Literal["base image", "agent runtime", "task image"]
    status: Literal["present", "built", "pulled", "failed"]
    tasks: int  # how many of the benchmark's tasks use it
    seconds: float
    detail: str = ""


def prepare_images(
    benchmark: Benchmark, *, client: Any, cache_dir: Path | None, progress: Progress
) -> list[Prepared]:
    from sandbox.images.build import ensure_base_image, ensure_runtime, ensure_task_image

    prepared: list[Prepared] = []
    tasks = benchmark.tasks()
    users: dict[str, int] = {}
    for task in tasks:
        if task.image is not None:
            users[task.image] = users.get(task.image, 0) + 1
    without_image = len(tasks) - sum(users.values())

    started = time.monotonic()
    base_present = _present(client, None)
    base = ensure_base_image(client, cache_dir, progress=progress)
    status: Literal["present", "built"] = "present" if base in base_present else "built"
    prepared.append(Prepared(base, "base image", status, without_image, time.monotonic() - started))

    started = time.monotonic()
    lines: list[str] = []

    def note(line: str) -> None:
        lines.append(line)
        progress(line)

    runtime = ensure_runtime(client, base, cache_dir, progress=note)
    status = "built" if lines else "present"
    prepared.append(Prepared(str(runtime), "agent runtime", status, len(tasks), time.monotonic() - started))

    for number, (image, count) in enumerate(sorted(users.items()), start=1):
        progress(f"[{number}/{len(users)}] {image}")
        started = time.monotonic()
        had = image in _present(client, image)
        try:
            ensure_task_image(client, image, progress=progress)
        except SandboxUnavailable as exc:
            prepared.append(
                Prepared(image, "task image", "failed", count, time.monotonic() - started, str(exc))
            )
            continue
        prepared.append(
            Prepared(image, "task image", "present" if had else "pulled", count, time.monotonic() - started)
        )
    return prepared


def _present(client: Any, name: str | None) -> set[str]:
    """Tags the engine has: of `name`, or of Clade's base repository."""
    from docker.errors import ImageNotFound

    from sandbox.images.build import BASE_REPOSITORY

    if name is None:
        return {tag for image in client.images.list(name=BASE_REPOSITORY) for tag in image.tags}
    try:
        client.images.get(name)
    except ImageNotFound:
        return set()
    return {name}
