"""What an agent that writes without bound costs the worker: its memory, its disk, its time.

Through the real evaluation path (tests/worker/harness.py: a live service, Docker sandboxes,
the gateway, a scripted model), two hostile agents (tests/worker/agents/attack_disk.py):

- flood: writes 3x the worker's disk limit (CLADE_SANDBOX_DISK_MB, `--limit-mb`) of random
  data to its repository and output folder;
- wide diff: writes 15 random files of 2 MiB each (each at the patch cap, 30 MiB together,
  under the 16x-the-cap refusal), so git copies them and the diff (about 40 MB of base85)
  is read until it passes the 2 MiB cap.

For each, in each enforcement this host can run (`loop`, `watch`), it prints the wall time
of `evaluate`, the recorded failure, the worker process's peak RSS over its RSS before the
evaluation (sampled every 20 ms), and the most the worker's folders took on the host's own
disk (sampled likewise: the image file's blocks in `loop`, the tree in `watch`).

    python perf/agent_disk.py [--limit-mb 256]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sandbox.disk import MiB, can_loop_mount
from tests.worker.harness import SECRET_PREFIX, EvaluationStack, evaluation_stack, make_agent


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def host_disk_bytes(folder: Path) -> int:
    """What the tree takes on the host's own file system: a loop disk mounted inside it counts
    as its image file's blocks (listed beside it), never twice."""
    device = os.stat(folder).st_dev
    total = 0
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if _same_device(os.path.join(dirpath, d), device)]
        for name in filenames:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
            except OSError:
                continue
    return total


def _same_device(path: str, device: int) -> bool:
    try:
        return os.lstat(path).st_dev == device
    except OSError:
        return False


class Sampler:
    """Peak RSS of this process and peak disk use of `work_dir`, every `interval_s`."""

    def __init__(self, work_dir: Path, interval_s: float = 0.02) -> None:
        self.work_dir = work_dir
        self.interval_s = interval_s
        self.peak_rss = 0
        self.peak_disk = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.peak_rss = max(self.peak_rss, rss_bytes())
            if self.work_dir.exists():
                self.peak_disk = max(self.peak_disk, host_disk_bytes(self.work_dir))

    @contextmanager
    def running(self) -> Iterator[Sampler]:
        self._thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            self._thread.join()


def measure(stack: EvaluationStack, agent: Path, enforcement: str, limit_mb: int) -> dict[str, Any]:
    before = stack.ctx.settings
    stack.ctx.settings = before.model_copy(
        update={"sandbox_disk_mb": limit_mb, "sandbox_disk_enforcement": enforcement}
    )
    try:
        baseline = rss_bytes()
        sampler = Sampler(stack.ctx.work_dir)
        started = time.monotonic()
        with sampler.running():
            evaluated = stack.evaluate(agent, solve_timeout_s=300)
        wall = time.monotonic() - started
    finally:
        stack.ctx.settings = before
    return {
        "wall_s": wall,
        "failure": evaluated.result.failure,
        "rss_growth_mib": max(sampler.peak_rss - baseline, 0) / MiB,
        "peak_disk_mib": sampler.peak_disk / MiB,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit-mb", type=int, default=256)
    args = parser.parse_args()
    enforcements = ["loop", "watch"] if can_loop_mount() else ["watch"]
    with tempfile.TemporaryDirectory(prefix="clade-perf-disk-") as tmp:
        root = Path(tmp)
        secret = f"{SECRET_PREFIX}{uuid.uuid4().hex}"
        cases = {
            "flood": {"repo_mb": 2 * args.limit_mb, "out_mb": args.limit_mb},
            "wide diff": {"repo_mb": 30, "out_mb": 0, "per_file_mb": 2},
        }
        with evaluation_stack(
            root / "stack", secret=secret, owner=f"perf-disk-{uuid.uuid4().hex[:8]}"
        ) as stack:
            for name, payload in cases.items():
                targets = {"secret_prefix_b64": "", "hidden_b64": []} | payload
                agent = make_agent(root / "agents" / name.replace(" ", "-"), "attack_disk", targets)
                for enforcement in enforcements:
                    figures = measure(stack, agent, enforcement, args.limit_mb)
                    print(
                        f"{name:9} {enforcement:5}  wall {figures['wall_s']:6.1f} s"
                        f"  worker RSS +{figures['rss_growth_mib']:6.1f} MiB"
                        f"  peak disk {figures['peak_disk_mib']:7.1f} MiB"
                        f"  failure: {figures['failure']}",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
