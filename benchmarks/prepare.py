"""Every image a run on a benchmark will need, made ahead of time (`clade bench prepare`).

Clade's base image and the agent runtime made from it (built locally), then each task's
own image (SWE-bench: the instance images), used as they are when the engine has them
and pulled otherwise. A task image that cannot be had is reported, and the rest go on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

from benchmarks.base import Benchmark, BuildsEnvironments, Task
from sandbox.base import ImageStore, SandboxUnavailable

Progress = Callable[[str], None]
_T = TypeVar("_T")


@dataclass(frozen=True)
class Prepared:
    """One image (or the runtime folder) and what preparing it took."""

    name: str
    kind: Literal["base image", "agent runtime", "task image"]
    status: Literal["present", "built", "pulled", "failed"]
    tasks: int  # how many of the benchmark's tasks use it
    seconds: float
    detail: str = ""


def prepare_images(benchmark: Benchmark, *, images: ImageStore, progress: Progress) -> list[Prepared]:
    prepared: list[Prepared] = []
    tasks = benchmark.tasks()
    users: dict[str, int] = {}
    builds: dict[str, Task] = {}  # image -> a task it is built for (BuildsEnvironments)
    for task in tasks:
        if task.image is not None:
            users[task.image] = users.get(task.image, 0) + 1
            if isinstance(benchmark, BuildsEnvironments):
                builds.setdefault(task.image, task)
    without_image = len(tasks) - sum(users.values())

    started = time.monotonic()
    base, built = _noting(lambda note: images.base(progress=note), progress)
    status: Literal["present", "built"] = "built" if built else "present"
    prepared.append(Prepared(base, "base image", status, without_image, time.monotonic() - started))

    started = time.monotonic()
    runtime, built = _noting(lambda note: images.runtime(base, progress=note), progress)
    status = "built" if built else "present"
    prepared.append(Prepared(str(runtime), "agent runtime", status, len(tasks), time.monotonic() - started))

    for number, (image, count) in enumerate(sorted(users.items()), start=1):
        progress(f"[{number}/{len(users)}] {image}")
        started = time.monotonic()
        try:
            had = images.exists(image)
            if image in builds and isinstance(benchmark, BuildsEnvironments):
                made: Literal["present", "built", "pulled"] = (
                    "built" if benchmark.build_environment(builds[image], images, progress) else "present"
                )
            else:
                images.for_task(image, progress=progress)
                made = "present" if had else "pulled"
        except SandboxUnavailable as exc:
            prepared.append(
                Prepared(image, "task image", "failed", count, time.monotonic() - started, str(exc))
            )
            continue
        prepared.append(Prepared(image, "task image", made, count, time.monotonic() - started))
    return prepared


def _noting(make: Callable[[Progress], _T], progress: Progress) -> tuple[_T, bool]:
    """What `make` returns, and whether it reported any step (a build: a present image says nothing)."""
    lines: list[str] = []

    def note(line: str) -> None:
        lines.append(line)
        progress(line)

    return make(note), bool(lines)
