"""Sandbox start to first command finished, over N fresh sandboxes (goal: median under 1 s).

Each run: start a sandbox from the base image, run `true` in it, and stop the clock
when the result is back. Removal is timed separately; it is not on the agent's path.

    python perf/sandbox_start.py [--runs 20] [--backend docker] [--image TAG]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sandbox.base import SandboxSpec
from sandbox.docker_backend import connect
from sandbox.images.build import ensure_base_image
from sandbox.registry import backend_names, get_backend

GOAL_S = 1.0


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--backend", default="docker", choices=backend_names())
    parser.add_argument("--image", help="image to start (default: the base image, built if needed)")
    parser.add_argument("--cache-dir", type=Path, help="image build cache (default ~/.cache/clade/images)")
    args = parser.parse_args()

    image = args.image or ensure_base_image(connect(), args.cache_dir, progress=print)
    backend = get_backend(args.backend, owner="perf-sandbox-start")
    backend.remove_orphans("perf-sandbox-start")
    spec = SandboxSpec(image=image)

    starts: list[float] = []
    closes: list[float] = []
    for _ in range(args.runs):
        began = time.perf_counter()
        box = backend.start(spec)
        result = box.exec(["true"], timeout_s=30)
        ready = time.perf_counter()
        box.close()
        closes.append(time.perf_counter() - ready)
        if result.exit_code != 0:
            print(f"first command failed: {result}", file=sys.stderr)
            return 1
        starts.append(ready - began)

    median, p90 = statistics.median(starts), percentile(starts, 0.9)
    print(f"backend={args.backend} image={image} runs={args.runs}")
    print(
        f"start -> first command done: median {median * 1000:.0f} ms, p90 {p90 * 1000:.0f} ms, "
        f"min {min(starts) * 1000:.0f} ms, max {max(starts) * 1000:.0f} ms"
    )
    print(f"close (not on the agent's path): median {statistics.median(closes) * 1000:.0f} ms")
    verdict = "meets" if median < GOAL_S else "MISSES"
    print(f"goal: median under {GOAL_S:.1f} s -> {verdict} (ratio {median / GOAL_S:.2f})")
    return 0 if median < GOAL_S else 1


if __name__ == "__main__":
    sys.exit(main())
