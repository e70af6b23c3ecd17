"""A Clade whose every process the test may kill: its own Postgres and Redis (stores.py), the
service, Celery workers, and the scripted model; and a seeded schedule of disruptions.

A worker is killed with SIGKILL on its whole process group (pool processes included, its
sandboxes left running, as when a machine fails) and started again under the same name, so its
start-up removes what it left. The service is killed with SIGKILL and started again on the same
port and data dir. Redis and Postgres are stopped and started again in place.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from benchmarks.registry import get_benchmark
from sandbox.registry import get_backend
from tests.e2e.disks import remove_left_disks
from tests.e2e.stores import LocalPostgres, LocalRedis
from tests.helpers import tar_of
from tests.servers import ServiceProcess, service_env, start_service
from worker.curriculum import Curriculum, build_script
from worker.llm.scripted import ScriptedServer

SEED_AGENT = Path(__file__).resolve().parents[2] / "seed_agent"
MODEL_KEY = "sk-chaos-upstream-key"
WORKER_DISRUPTION = "worker"
DISRUPTIONS = ("redis", "postgres", "service")
FINISHED = ("completed", "failed", "cancelled")


@dataclass
class ChaosCluster:
    root: Path
    service_env: dict[str, str]
    service: ServiceProcess
    llm_url: str
    redis: LocalRedis | None  # None: the embedded file broker in the service's data dir
    postgres: LocalPostgres | None  # None: SQLite in the service's data dir
    workers: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    started: int = 0

    @property
    def database_url(self) -> str:
        return self.service_env["CLADE_DATABASE_URL"]

    def owner(self, name: str) -> str:
        """The sandbox owner label of the worker started as `name`."""
        return f"worker-{name}-{self.tag}"

    def start_worker(self, name: str, concurrency: int = 2) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CLADE_")}
        env |= {
            "CLADE_SERVICE_URL": self.service.url,
            "CLADE_WORKER_TOKEN": self.service.secrets["worker_token"],
            "CLADE_LLM_BASE_URL": self.llm_url,
            "CLADE_LLM_API_KEY": MODEL_KEY,
            "CLADE_BROKER_VISIBILITY_TIMEOUT_S": self.service_env["CLADE_BROKER_VISIBILITY_TIMEOUT_S"],
        }
        if self.redis is not None:
            env |= {"CLADE_BROKER_URL": self.redis.url, "CLADE_DATA_DIR": str(self.root / f"w-{name}")}
        else:  # the file broker: one machine, one data dir (as `clade up` and the demo)
            env["CLADE_DATA_DIR"] = self.service_env["CLADE_DATA_DIR"]
        self.started += 1
        unique = f"{name}-{self.tag}"
        log = (self.root / f"worker-{name}-{self.started}.log").open("wb")
        self.workers[name] = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "worker", f"--concurrency={concurrency}", f"--name={unique}"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()

    def kill_worker(self, name: str) -> None:
        process = self.workers.pop(name)
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)

    def restart_worker(self, name: str) -> None:
        self.kill_worker(name)
        self.start_worker(name)

    def restart_service(self) -> None:
        self.service.stop(kill=True)
        self.service = start_service(self.service_env)

    def disrupt(self, what: str) -> None:
        if what == "redis" and self.redis is not None:
            self.redis.restart()
        elif what == "postgres" and self.postgres is not None:
            self.postgres.restart()
        elif what == "service":
            self.restart_service()
        else:
            self.restart_worker(what)

    def request(self, method: str, path: str, token: str | None = None, **kwargs: Any) -> httpx.Response:
        with self.service.client(token) as client:
            return client.request(method, path, **kwargs)

    def run_status(self, run_id: str) -> str | None:
        """The run's status, or None while the service (or its database) cannot say."""
        try:
            response = self.request("GET", f"/api/runs/{run_id}")
        except httpx.TransportError:
            return None
        return str(response.json()["status"]) if response.status_code == 200 else None

    def start_run(self, config: dict[str, Any]) -> str:
        seed = self.request(
            "POST", "/api/seeds", "admin_token", files={"file": ("seed.tgz", tar_of(SEED_AGENT))}
        )
        assert seed.status_code == 201, seed.text
        config = config | {"seed_agent": seed.json()["id"]}
        created = self.request("POST", "/api/runs", "admin_token", json=config)
        assert created.status_code == 201, created.text
        return str(created.json()["id"])

    def logs(self) -> str:
        paths = [*sorted(self.root.glob("worker-*.log")), self.service.log_path]
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in paths)


@contextmanager
def chaos_cluster(
    root: Path,
    curriculum: Curriculum,
    *,
    redis: bool = True,
    postgres: bool = True,
    visibility_timeout_s: int,
    redispatch_margin_s: float,
) -> Iterator[ChaosCluster]:
    """The stores, the scripted model and the service (no worker yet); all stopped on exit,
    and every sandbox of the cluster's workers removed."""
    with ExitStack() as stack:
        local_redis = LocalRedis(root / "redis") if redis else None
        local_postgres = None
        if postgres:
            # Not under pytest's folders (mode 0700): Postgres runs as its own user.
            folder = Path(tempfile.mkdtemp(prefix="clade-chaos-pg-", dir="/tmp"))
            stack.callback(shutil.rmtree, folder, ignore_errors=True)
            local_postgres = LocalPostgres(folder)
        for store in (local_redis, local_postgres):
            if store is not None:
                store.start()
                stack.callback(store.stop)
        tasks = get_benchmark("clade-mini").tasks()
        model = stack.enter_context(ScriptedServer(build_script(tasks, curriculum), api_key=MODEL_KEY))
        data_dir = root / "service"
        extra = {
            "CLADE_RUN_DRIVER_ENABLED": "true",
            "CLADE_DRIVER_INTERVAL_S": "0.5",
            "CLADE_DRIVER_MAX_BACKOFF_S": "2",
            "CLADE_BROKER_VISIBILITY_TIMEOUT_S": str(visibility_timeout_s),
            "CLADE_DRIVER_REDISPATCH_MARGIN_S": str(redispatch_margin_s),
        }
        if local_redis is not None:
            extra["CLADE_BROKER_URL"] = local_redis.url
        database = local_postgres.url if local_postgres is not None else f"sqlite:///{data_dir / 'clade.db'}"
        service = start_service(service_env(data_dir, database, 0, **extra))
        cluster = ChaosCluster(
            root=root,
            service_env=service.env,  # with the port it got: a restart keeps it
            service=service,
            llm_url=model.base_url,
            redis=local_redis,
            postgres=local_postgres,
        )
        stack.callback(_remove_sandboxes, cluster)
        stack.callback(lambda: cluster.service.stop())
        stack.callback(_stop_workers, cluster)
        yield cluster


def _stop_workers(cluster: ChaosCluster) -> None:
    for name in list(cluster.workers):
        cluster.kill_worker(name)
    # The cleanup a worker runs as it starts, for the disks the killed ones left mounted.
    for work in [*cluster.root.glob("w-*/work"), Path(cluster.service_env["CLADE_DATA_DIR"]) / "work"]:
        remove_left_disks(work)


def _remove_sandboxes(cluster: ChaosCluster) -> None:
    backend = get_backend("docker", owner=f"chaos-teardown-{cluster.tag}")
    for name in ("chaos", "broker"):
        backend.remove_orphans(cluster.owner(name))


def disruptions(rng: random.Random, worker: str, worker_kills: int) -> list[str]:
    """The run's disruptions in a seeded random order: each store and the service once."""
    plan = [worker] * worker_kills + list(DISRUPTIONS)
    rng.shuffle(plan)
    return plan


def drive_with_chaos(
    cluster: ChaosCluster,
    run_id: str,
    plan: list[str],
    *,
    rng: random.Random,
    mean_gap_s: float,
    timeout_s: float,
) -> tuple[str, list[str]]:
    """Wait for the run to finish while disrupting it as `plan` says, each after a random gap;
    the run's final status and the disruptions made before it finished."""
    done: list[str] = []
    pending = list(plan)
    deadline = time.monotonic() + timeout_s
    next_at = time.monotonic() + rng.uniform(0.5, 1.5) * mean_gap_s
    while True:
        status = cluster.run_status(run_id)
        if status in FINISHED:
            return str(status), done
        if time.monotonic() > deadline:
            raise AssertionError(f"run not finished after {timeout_s}s ({done=})\n{cluster.logs()}")
        if pending and time.monotonic() >= next_at:
            what = pending.pop(0)
            cluster.disrupt(what)
            done.append(what)
            next_at = time.monotonic() + rng.uniform(0.5, 1.5) * mean_gap_s
        time.sleep(0.2)


def wait_for(predicate: Callable[[], object], timeout_s: float, what: str, cluster: ChaosCluster) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}\n{cluster.logs()}")
        time.sleep(0.2)
