"""Evaluation throughput: clade-mini tasks per minute at one and at two worker slots.

Each measurement starts a fresh local stack (service, run driver, one worker with N
slots, the scripted model), imports the seed agent and scores it on clade-mini in an
evaluation-only run; tasks per minute = tasks / wall time from run start to completion.
Both are measured side by side in one invocation and the ratio is printed.

    python perf/bench_throughput.py [--subset all] [--slots 1 2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cli.client import ApiClient
from cli.seeds import pack_agent
from cli.stack import SEED_AGENT_DIR, local_stack
from contracts.settings import Settings


def measure(slots: int, subset: str) -> tuple[int, float]:
    with tempfile.TemporaryDirectory(prefix="clade-throughput-") as tmp:
        settings = Settings(data_dir=Path(tmp), service_url="http://127.0.0.1:0").with_tokens()
        with local_stack(settings, concurrency=slots) as stack:
            assert settings.admin_token is not None
            client = ApiClient(stack.service_url, settings.admin_token.get_secret_value())
            files = {"file": ("seed.tar", pack_agent(SEED_AGENT_DIR), "application/x-tar")}
            seed = client.post("/api/seeds", files=files)["id"]
            config = {
                "seed_agent": seed,
                "benchmark": {"name": "clade-mini"},
                "stages": [{"subset": subset}],
                "budget": {"max_children": 0},
            }
            # Warm the worker (image lookup, first imports) on one task before timing.
            client.post("/api/runs", json=config | {"stages": [{"tasks": ["clade-mini__textkit-1"]}]})
            _wait_idle(client, stack)
            start = time.monotonic()
            run = client.post("/api/runs", json=config)
            while client.get(f"/api/runs/{run['id']}")["status"] == "running":
                stack.check_alive()
                time.sleep(0.25)
            elapsed = time.monotonic() - start
            return len(run["stage_tasks"][0]), elapsed


def _wait_idle(client: ApiClient, stack: object) -> None:
    while any(r["status"] == "running" for r in client.get("/api/runs")["items"]):
        time.sleep(0.25)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--subset", default="all")
    parser.add_argument("--slots", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    rates: dict[int, float] = {}
    for slots in args.slots:
        tasks, elapsed = measure(slots, args.subset)
        rates[slots] = tasks / elapsed * 60
        print(
            f"{slots} worker slot(s): {tasks} tasks in {elapsed:.1f}s = {rates[slots]:.1f} tasks/min",
            flush=True,
        )
    if 1 in rates and len(rates) > 1:
        for slots, rate in rates.items():
            if slots != 1:
                print(f"ratio {slots} slots / 1 slot: {rate / rates[1]:.2f}")


if __name__ == "__main__":
    main()
