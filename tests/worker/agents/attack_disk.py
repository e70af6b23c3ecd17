"""Writes far more than its disk allowance to its writable folders (the repository and the
output folder), in 1 MiB writes, until the file system refuses or it is stopped; with
`forever`, it then goes on writing until it is."""

from __future__ import annotations

import os
import time
from pathlib import Path

from probe import OUT, REPO, TARGETS

CHUNK = os.urandom(1024 * 1024)  # incompressible: no file system or git trick makes it small


def fill(folder: Path, total_mb: int, per_file_mb: int = TARGETS.get("per_file_mb", 16)) -> int:
    written = 0
    index = 0
    while written < total_mb:
        with open(folder / f"fill-{index}.bin", "wb") as handle:
            for _ in range(min(per_file_mb, total_mb - written)):
                handle.write(CHUNK)
                handle.flush()
                written += 1
        index += 1
    return written


try:
    done = fill(REPO, TARGETS["repo_mb"]) + fill(OUT, TARGETS["out_mb"])
    print(f"wrote {done} MiB unhindered", flush=True)
    while TARGETS.get("forever"):  # only a refusal or a kill ends it
        with open(OUT / "more.bin", "ab") as more:
            more.write(CHUNK)
        time.sleep(0.1)
except OSError as exc:
    print(f"refused: {type(exc).__name__}: {exc}", flush=True)
    raise SystemExit(3) from exc
