"""The loop-mounted disks a killed worker leaves under its data dir, removed as the next worker on
that data dir would remove them at start (`remove_abandoned_disks`): else pytest cannot delete
the test's folder ("Device or resource busy")."""

from __future__ import annotations

import time
from pathlib import Path

from sandbox.disk import remove_abandoned_disks


def mounts_under(folder: Path) -> list[str]:
    table = Path("/proc/self/mounts").read_text().splitlines()
    # The mount table escapes spaces and the like as octal; the test's folders have none.
    return [fields[1] for fields in map(str.split, table) if fields[1].startswith(f"{folder}/")]


def remove_left_disks(work: Path, timeout_s: float = 60) -> None:
    """Every disk under `work` whose process is gone; a killed process's children may take a
    moment to be reaped (until then they still count as alive), hence the polling."""
    deadline = time.monotonic() + timeout_s
    while True:
        remove_abandoned_disks(work)
        left = mounts_under(work)
        if not left:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"disks still mounted under {work} after {timeout_s:.0f}s: {left}")
        time.sleep(0.2)
