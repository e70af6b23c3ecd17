"""A whole Clade on one machine: Redis broker, service with its driver, real Celery workers,
Docker sandboxes, and the scripted model (the stand-in for a remote LLM)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis

from benchmarks.registry import get_benchmark
from tests.e2e.disks import remove_left_disks
from tests.servers import ServiceProcess, service_env, start_service
from worker.curriculum import Curriculum, build_script
from worker.llm.script import Script
from worker.llm.scripted import ScriptedServer

REDIS_URL = os.environ.get("CLADE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
SEED_AGENT = Path(__file__).resolve().parents[2] / "seed_agent"
CLAIM_KEY = "clade-test:claimed-by"
CLAIM_TTL_S = 3600  # longer than any test; frees the database of a test process that died


def claim_redis_db(claimant: str) -> str:
    """The URL of an empty Redis database claimed for `claimant`, one after CLADE_TEST_REDIS_URL's:
    clusters running at the same time (pytest-xdist processes, other sessions on this machine)
    must not take each other's tasks from a shared queue."""
    base, _, db = REDIS_URL.rpartition("/")
    index = int(db or 0) + 1
    while True:
        url = f"{base}/{index}"
        with redis.Redis.from_url(url) as client:
            try:
                claimed = client.set(CLAIM_KEY, claimant, nx=True, ex=CLAIM_TTL_S)
            except redis.ResponseError as exc:  # past the server's last database
                raise AssertionError(f"no unclaimed Redis database after {REDIS_URL}: {exc}") from exc
            if claimed:
                with client.pipeline(transaction=True) as pipe:
                    pipe.flushdb().set(CLAIM_KEY, claimant, ex=CLAIM_TTL_S).execute()
                return url
        index += 1


def release_redis_db(url: str, claimant: str) -> None:
    with redis.Redis.from_url(url) as client:
        if client.get(CLAIM_KEY) == claimant.encode():
            client.flushdb()


@dataclass
class Cluster:
    service: ServiceProcess
    broker_url: str
    llm_url: str
    root: Path
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    names: set[str] = field(default_factory=set)
    # Worker names carry it: tests find a worker's sandboxes by its owner label, so another
    # test's (or another session's) worker of the same name must not share it.
    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:8])

    def owner(self, name: str) -> str:
        """The sandbox owner label of the worker started as `name`."""
        return f"worker-{name}-{self.tag}"

    def worker_data_dir(self, name: str) -> Path:
        return self.root / f"worker-{name}"

    def start_worker(self, name: str = "e2e") -> subprocess.Popen[bytes]:
        """A worker as on another machine: its own data dir; only URLs and the worker token.
        Starting `name` again is the same machine coming back, on the same data dir: it removes
        what a killed predecessor left there (its sandboxes' loop-mounted disks) as it starts."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("CLADE_")}
        env |= {
            "CLADE_DATA_DIR": str(self.worker_data_dir(name)),
            "CLADE_BROKER_URL": self.broker_url,
            "CLADE_SERVICE_URL": self.service.url,
            "CLADE_WORKER_TOKEN": self.service.secrets["worker_token"],
            "CLADE_LLM_BASE_URL": self.llm_url,
            "CLADE_LLM_API_KEY": "sk-e2e-upstream-key",
            "CLADE_BROKER_VISIBILITY_TIMEOUT_S": self.service.env["CLADE_BROKER_VISIBILITY_TIMEOUT_S"],
        }
        log = (self.root / f"worker-{name}-{len(self.workers)}.log").open("wb")
        self.names.add(name)
        unique = f"{name}-{self.tag}"
        process = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "worker", "--concurrency", "2", "--name", unique],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.workers.append(process)
        return process

    def kill_worker(self, process: subprocess.Popen[bytes]) -> None:
        """SIGKILL the worker and its pool processes, as a machine failure would."""
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)

    def worker_logs(self) -> str:
        return "\n".join(
            p.read_text(errors="replace")[-4000:] for p in sorted(self.root.glob("worker-*.log"))
        )


@pytest.fixture
def cluster_factory(tmp_path: Path) -> Iterator[object]:
    started: list[Cluster] = []
    servers: list[ScriptedServer] = []
    claimed: list[str] = []
    claimant = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"

    def make(
        curriculum: Curriculum | None,
        *,
        visibility_timeout_s: int = 7200,
        script_edit: Callable[[Script], Script] | None = None,
        llm_url: str | None = None,
        **settings: str,
    ) -> Cluster:
        """The scripted model playing `curriculum` (`script_edit` changes its script: rules for some
        model names, refusals), or the real model server at `llm_url` (with /v1) when given.
        `settings`: more of the service's environment (CLADE_HEADER_TIMEOUT_S="2", ...)."""
        broker = claim_redis_db(claimant)
        claimed.append(broker)
        if llm_url is None:
            assert curriculum is not None, "the scripted model needs a curriculum"
            script = build_script(get_benchmark("clade-mini").tasks(), curriculum)
            server = ScriptedServer(
                script_edit(script) if script_edit else script, api_key="sk-e2e-upstream-key"
            )
            server.__enter__()
            servers.append(server)
            llm_url = server.base_url
        env = service_env(
            tmp_path / "service",
            f"sqlite:///{tmp_path / 'clade.db'}",
            0,
            CLADE_BROKER_URL=broker,
            CLADE_RUN_DRIVER_ENABLED="true",
            CLADE_DRIVER_INTERVAL_S="0.5",
            CLADE_BROKER_VISIBILITY_TIMEOUT_S=str(visibility_timeout_s),
            **settings,
        )
        cluster = Cluster(service=start_service(env), broker_url=broker, llm_url=llm_url, root=tmp_path)
        started.append(cluster)
        return cluster

    yield make
    for cluster in started:
        for process in cluster.workers:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
        # What a worker killed last (no successor started on its data dir) left mounted: the
        # cleanup a worker runs as it starts, so that pytest can remove the test's folder.
        for name in cluster.names:
            remove_left_disks(cluster.worker_data_dir(name) / "work")
        cluster.service.stop()
    for server in servers:
        server.__exit__(None, None, None)
    for broker in claimed:
        release_redis_db(broker, claimant)


def wait_for(predicate, timeout_s: float, what: str, cluster: Cluster | None = None):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    logs = cluster.worker_logs() if cluster else ""
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what}\n{logs}")
