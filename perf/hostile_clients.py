"""Hostile clients: health latency and run progress under attack, against the same without.

Two fresh clusters, one after the other in one sitting (each: Redis broker, the service with
its run driver on SQLite, one worker with 2 slots, the scripted model). On each, a one-child
run on clade-mini (stage: one task) goes to completion while `/api/health` and `/api/agents`
are probed every 0.5 s on new connections. The second cluster meanwhile gets the hostile
mix of tests/e2e/hostile.py: stalled export readers, slowloris, alias bombs, slow readers.
Prints health latency (median, p95, max), failed probes, and the run's wall time, with the
ratios hostile / calm.

    python perf/hostile_clients.py [--stalled 20] [--slowloris 30] [--runs 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.registry import get_benchmark
from tests.e2e.conftest import Cluster, claim_redis_db, release_redis_db
from tests.e2e.hostile import HostileLoad, HostileMix
from tests.e2e.test_hostile_clients import A, B, import_big_agent, start_run
from tests.servers import service_env, start_service
from worker.curriculum import Curriculum, build_script
from worker.llm.scripted import ScriptedServer


@dataclass(frozen=True)
class Outcome:
    label: str
    run_s: float
    status: str
    health_ms: list[float]
    failed_probes: int
    counts: dict[str, int]


@contextmanager
def cluster(root: Path) -> Iterator[Cluster]:
    claimant = f"perf-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    broker = claim_redis_db(claimant)
    script = build_script(get_benchmark("clade-mini").tasks(), Curriculum(seed=[A], gen1=[B]))
    with ExitStack() as stack:
        server = stack.enter_context(ScriptedServer(script, api_key="sk-e2e-upstream-key"))
        env = service_env(
            root / "service",
            f"sqlite:///{root / 'clade.db'}",
            0,
            CLADE_BROKER_URL=broker,
            CLADE_RUN_DRIVER_ENABLED="true",
            CLADE_DRIVER_INTERVAL_S="0.5",
            CLADE_BROKER_VISIBILITY_TIMEOUT_S="7200",
            CLADE_HEADER_TIMEOUT_S="2",
        )
        built = Cluster(service=start_service(env), broker_url=broker, llm_url=server.base_url, root=root)
        try:
            yield built
        finally:
            for process in built.workers:
                built.kill_worker(process)
            built.service.stop()
            release_redis_db(broker, claimant)


def measure(label: str, root: Path, mix: HostileMix | None) -> Outcome:
    with cluster(root) as built:
        big = import_big_agent(built, root / "big")
        token = built.service.secrets["admin_token"]
        load = HostileLoad(built.service.url, token, big, mix) if mix is not None else None
        latencies: list[float] = []
        failed = 0
        with load if load is not None else nullcontext():
            built.start_worker("perf")
            started = time.monotonic()
            run_id = start_run(built)
            status = "running"
            while status not in ("completed", "failed", "cancelled") and time.monotonic() - started < 900:
                probe = time.monotonic()
                try:
                    health = httpx.get(f"{built.service.url}/api/health", timeout=30)
                    latencies.append((time.monotonic() - probe) * 1000)
                    agents = httpx.get(f"{built.service.url}/api/agents", timeout=30)
                    failed += health.status_code != 200 or agents.status_code != 200
                    status = httpx.get(f"{built.service.url}/api/runs/{run_id}", timeout=30).json()["status"]
                except httpx.TransportError:
                    failed += 1
                time.sleep(0.5)
            run_s = time.monotonic() - started
        counts = dict(load.counts) if load is not None else {}
    return Outcome(label, run_s, status, latencies, failed, counts)


def _p(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) >= 2 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--stalled", type=int, default=20)
    parser.add_argument("--slowloris", type=int, default=30)
    args = parser.parse_args()
    mix = HostileMix(stalled_readers=args.stalled, slowloris=args.slowloris, bomb_posters=2, slow_readers=2)
    with tempfile.TemporaryDirectory(prefix="clade-hostile-") as tmp:
        calm = measure("calm", Path(tmp) / "calm", None)
        hostile = measure("hostile", Path(tmp) / "hostile", mix)
    widths = {"": 8, "run s": 7, "status": 10, "health p50 ms": 14, "p95 ms": 8, "max ms": 8, "failed": 7}
    print(" ".join(f"{name:>{width}}" for name, width in widths.items()))
    for o in (calm, hostile):
        p50, p95, top = statistics.median(o.health_ms), _p(o.health_ms, 95), max(o.health_ms)
        row = f"{o.label:8} {o.run_s:7.1f} {o.status:>10} {p50:14.1f} {p95:8.1f} {top:8.1f}"
        print(f"{row} {o.failed_probes:7}")
    print(
        f"ratios hostile/calm: run time {hostile.run_s / calm.run_s:.2f}, health p50 "
        f"{statistics.median(hostile.health_ms) / statistics.median(calm.health_ms):.2f}, "
        f"p95 {_p(hostile.health_ms, 95) / _p(calm.health_ms, 95):.2f}"
    )
    print(f"hostile clients: {hostile.counts}")


if __name__ == "__main__":
    main()
