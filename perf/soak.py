"""Soak: evolution runs back to back on one local stack for N minutes; does anything grow?

One stack (service with its run driver, one worker with 2 slots, the scripted model, SQLite)
runs the demo's evolution config (clade-mini, mini-5 then mini-10, 4 children, parallelism 2)
again and again until `--minutes` have passed (the last run is let finish). Every minute, and
at start and end, it samples: the service's resident memory (RSS) and open file descriptors,
the worker's (its main process plus its pool children, summed), and the Docker containers this
worker owns (by its owner label). Then it prints the samples, start/end/peak, and the runs.

    python perf/soak.py [--minutes 30] [--sample-s 60]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cli.client import ApiClient
from cli.demo import DEMO_CONFIG, demo_config
from cli.seeds import pack_agent
from cli.stack import SEED_AGENT_DIR, Stack, local_stack
from contracts.settings import Settings
from sandbox.base import OWNER_LABEL


@dataclass(frozen=True)
class Sample:
    at_s: float
    service_rss_mb: float
    service_fds: int
    worker_rss_mb: float
    worker_fds: int
    containers: int
    runs_done: int


def _children(pid: int) -> list[int]:
    """`pid` and all its descendants, from /proc (no psutil here)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry.name))
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(parents.get(current, []))
    return tree


def _rss_mb_and_fds(pids: list[int]) -> tuple[float, int]:
    rss_kb, fds = 0, 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    rss_kb += int(line.split()[1])
            fds += len(os.listdir(f"/proc/{pid}/fd"))
        except (FileNotFoundError, ProcessLookupError):  # a pool child that just ended
            continue
    return rss_kb / 1024, fds


def _containers(owner: str) -> int:
    done = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label={OWNER_LABEL}={owner}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return len(done.stdout.split())


def sample(stack: Stack, owner: str, start: float, runs_done: int) -> Sample:
    service_rss, service_fds = _rss_mb_and_fds(_children(stack.processes["service"].pid))
    worker_rss, worker_fds = _rss_mb_and_fds(_children(stack.processes["worker"].pid))
    return Sample(
        at_s=time.monotonic() - start,
        service_rss_mb=service_rss,
        service_fds=service_fds,
        worker_rss_mb=worker_rss,
        worker_fds=worker_fds,
        containers=_containers(owner),
        runs_done=runs_done,
    )


def soak(minutes: float, sample_s: float) -> None:
    worker_name = f"soak-{os.getpid()}"
    os.environ["CLADE_WORKER_NAME"] = worker_name  # the stack's worker inherits it: our label only
    owner = f"worker-{worker_name}"
    samples: list[Sample] = []
    runs: list[tuple[str, str, float, int]] = []
    with tempfile.TemporaryDirectory(prefix="clade-soak-") as tmp:
        settings = Settings(data_dir=Path(tmp), service_url="http://127.0.0.1:0").with_tokens()
        with local_stack(settings, concurrency=2) as stack:
            assert settings.admin_token is not None
            client = ApiClient(stack.service_url, settings.admin_token.get_secret_value())
            files = {"file": ("seed.tar", pack_agent(SEED_AGENT_DIR), "application/x-tar")}
            seed = client.post("/api/seeds", files=files)["id"]
            start = time.monotonic()
            end = start + minutes * 60
            samples.append(sample(stack, owner, start, 0))
            _print_sample(samples[-1])
            next_sample = start + sample_s
            while time.monotonic() < end:
                run_started = time.monotonic()
                config = demo_config(seed, DEMO_CONFIG["budget"]["max_children"]) | {"rng_seed": len(runs)}
                run = client.post("/api/runs", json=config)
                while (state := client.get(f"/api/runs/{run['id']}"))["status"] == "running":
                    stack.check_alive()
                    if time.monotonic() >= next_sample:
                        samples.append(sample(stack, owner, start, len(runs)))
                        _print_sample(samples[-1])
                        next_sample += sample_s
                    time.sleep(1.0)
                children = state["progress"]["children"]
                runs.append((run["id"], state["status"], time.monotonic() - run_started, children))
                print(
                    f"run {len(runs)} {run['id']}: {state['status']} ({state['stop_reason']}), "
                    f"{children} children, {runs[-1][2]:.0f}s",
                    flush=True,
                )
            _wait_containers_gone(owner)
            samples.append(sample(stack, owner, start, len(runs)))
            _print_sample(samples[-1])
    _report(samples, runs)


def _wait_containers_gone(owner: str, timeout_s: float = 60) -> None:
    """After the last run a sandbox may still be being removed; give it a moment, not forever."""
    deadline = time.monotonic() + timeout_s
    while _containers(owner) and time.monotonic() < deadline:
        time.sleep(1.0)


def _print_sample(s: Sample) -> None:
    print(
        f"{s.at_s / 60:6.1f} min  service {s.service_rss_mb:7.1f} MB {s.service_fds:4d} fds  "
        f"worker {s.worker_rss_mb:7.1f} MB {s.worker_fds:4d} fds  containers {s.containers}  "
        f"runs done {s.runs_done}",
        flush=True,
    )


def _report(samples: list[Sample], runs: list[tuple[str, str, float, int]]) -> None:
    first, last = samples[0], samples[-1]
    print(f"\n{'figure':<22}{'start':>10}{'end':>10}{'peak':>10}")
    for label, attr in (
        ("service RSS (MB)", "service_rss_mb"),
        ("service open fds", "service_fds"),
        ("worker RSS (MB)", "worker_rss_mb"),
        ("worker open fds", "worker_fds"),
        ("containers", "containers"),
    ):
        peak = max(getattr(s, attr) for s in samples)
        print(f"{label:<22}{getattr(first, attr):>10.1f}{getattr(last, attr):>10.1f}{peak:>10.1f}")
    statuses = sorted({status for _, status, _, _ in runs})
    counts = ", ".join(f"{sum(1 for r in runs if r[1] == s)} {s}" for s in statuses)
    print(f"\n{len(runs)} runs ({counts}), {sum(r[3] for r in runs)} children, over {last.at_s / 60:.1f} min")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--sample-s", type=float, default=60)
    args = parser.parse_args()
    soak(args.minutes, args.sample_s)


if __name__ == "__main__":
    main()
