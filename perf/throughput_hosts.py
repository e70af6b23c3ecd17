"""Evaluation throughput on clade-mini: 1 worker slot, 2 slots, and 2 worker hosts x 1 slot.

Side by side in one invocation, each on a fresh stack with the scripted model, the seed agent
scored in an evaluation-only run (as perf/bench_throughput.py does; its warm-up task first):

  local-1   one worker with 1 slot, `clade up`'s stack (SQLite, the embedded broker)
  local-2   one worker with 2 slots (concurrency 2), same stack
  hosts-1x1 the network-namespace topology of tests/e2e/netns.py (hub with Postgres, Redis,
            the service and the model) with one worker host of 1 slot: the baseline for ...
  hosts-1x2 the same topology, one worker host with 2 slots (separates the stores' effect from
            the hosts')
  hosts-2x1 ... the same topology with two worker hosts of 1 slot each

Tasks per minute = tasks / wall time from run start to completion. Ratios are printed against
local-1 (and hosts-2x1 against hosts-1x1, same stores). The hosts modes need root and `ip`.

    python perf/throughput_hosts.py [--subset all] [--modes local-1 local-2 hosts-1x1 hosts-1x2 hosts-2x1]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_throughput import measure as measure_local

from benchmarks.registry import get_benchmark
from cli.seeds import pack_agent
from cli.stack import SEED_AGENT_DIR
from tests.e2e.netns import NetnsCluster, netns_cluster
from worker.curriculum import DEMO_CURRICULUM, build_script


def _call(cluster: NetnsCluster, method: str, path: str, **kwargs: Any) -> Any:
    response = cluster.request(method, path, **kwargs)
    response.raise_for_status()
    return response.json()


def _wait_run(cluster: NetnsCluster, run_id: str, timeout_s: float = 1800) -> None:
    deadline = time.monotonic() + timeout_s
    while _call(cluster, "GET", f"/api/runs/{run_id}")["status"] == "running":
        if time.monotonic() > deadline:
            raise RuntimeError(f"run {run_id} still running after {timeout_s}s\n{cluster.logs()}")
        for name, process in cluster.processes.items():
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited with {process.returncode}\n{cluster.logs()}")
        time.sleep(0.25)


def measure_hosts(hosts: int, slots: int, subset: str) -> tuple[int, float]:
    script = build_script(get_benchmark("clade-mini").tasks(), DEMO_CURRICULUM)
    with netns_cluster(script, workers=hosts, concurrency=slots) as cluster:
        files = {"file": ("seed.tar", pack_agent(SEED_AGENT_DIR), "application/x-tar")}
        seed = _call(cluster, "POST", "/api/seeds", files=files)["id"]
        config = {
            "seed_agent": seed,
            "benchmark": {"name": "clade-mini"},
            "budget": {"max_children": 0},
        }
        # Warm-up: a task per slot (image lookup, first imports on each), then the timed run.
        warm = [task.instance_id for task in get_benchmark("clade-mini").tasks()[: hosts * slots]]
        run = _call(cluster, "POST", "/api/runs", json=config | {"stages": [{"tasks": warm}]})
        _wait_run(cluster, run["id"])
        start = time.monotonic()
        run = _call(cluster, "POST", "/api/runs", json=config | {"stages": [{"subset": subset}]})
        _wait_run(cluster, run["id"])
        return len(run["stage_tasks"][0]), time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--subset", default="all")
    parser.add_argument(
        "--modes",
        nargs="+",
        choices=("local-1", "local-2", "hosts-1x1", "hosts-1x2", "hosts-2x1"),
        default=["local-1", "local-2", "hosts-1x1", "hosts-1x2", "hosts-2x1"],
    )
    args = parser.parse_args()
    rates: dict[str, float] = {}
    rows: list[tuple[str, int, float]] = []
    for mode in args.modes:
        kind, _, shape = mode.partition("-")
        if kind == "local":
            tasks, elapsed = measure_local(int(shape), args.subset)
        else:
            hosts, slots = (int(n) for n in shape.split("x"))
            tasks, elapsed = measure_hosts(hosts, slots, args.subset)
        rates[mode] = tasks / elapsed * 60
        rows.append((mode, tasks, elapsed))
        print(f"{mode}: {tasks} tasks in {elapsed:.1f}s = {rates[mode]:.1f} tasks/min", flush=True)
    print(f"\n{'mode':<12}{'tasks':>6}{'seconds':>9}{'tasks/min':>11}{'vs local-1':>12}{'vs hosts-1x1':>14}")
    for mode, tasks, elapsed in rows:
        vs_local = f"{rates[mode] / rates['local-1']:.2f}" if "local-1" in rates else "-"
        vs_hosts = f"{rates[mode] / rates['hosts-1x1']:.2f}" if "hosts-1x1" in rates else "-"
        print(f"{mode:<12}{tasks:>6}{elapsed:>9.1f}{rates[mode]:>11.1f}{vs_local:>12}{vs_hosts:>14}")


if __name__ == "__main__":
    main()
