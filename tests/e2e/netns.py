"""Separate hosts on one machine, made of Linux network namespaces (root and iproute2's `ip`).

    hub  10.231.0.1/24 on the bridge hub0: Postgres, Redis, the service, the scripted model
     |-- veth -- w1  10.231.0.11/24: worker 1, its own host name, data dir and socket folder
     `-- veth -- w2  10.231.0.12/24: worker 2, likewise

A worker's namespace has a loopback with nothing listening on it and no route beyond the hub's
subnet: it reaches the service, Redis and the model only at the hub's address, exactly the
settings a worker on another machine gets. Each worker also has its own UTS namespace (host
name). All namespaces share the file system, hence the Docker engine's unix socket and the
image cache, as workers on one Docker host would; no Docker bridge address is involved.

The test process stays in the root namespace and reaches the hub through a thread that has
entered the hub's network namespace (`NetnsCluster.hub`).

Namespaces are named after the creating process (`clade<pid>-hub`); one whose creator is gone
is removed by the next topology, so even a SIGKILLed test run leaves nothing for long.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import psycopg

from sandbox.registry import get_backend
from tests.e2e import stores
from worker.llm.script import Script

T = TypeVar("T")
SUBNET = "10.231.0"
HUB_ADDRESS = f"{SUBNET}.1"
SERVICE_PORT, REDIS_PORT, POSTGRES_PORT, MODEL_PORT = 8420, 6379, 5432, 8000
MODEL_KEY = "sk-netns-upstream-key"
_NAME = re.compile(r"^clade(\d+)-(hub|w\d+)$")
_CLONE_NEWNET = 0x40000000


class NamespacesUnavailable(RuntimeError):
    """This machine cannot make the topology (no `ip`, not root, no network namespaces)."""


@dataclass(frozen=True)
class WorkerHost:
    namespace: str
    address: str
    hostname: str
    folder: Path

    @property
    def name(self) -> str:
        """The worker's name (CLADE_WORKER_NAME); its sandboxes' owner label is `owner`."""
        return self.hostname

    @property
    def owner(self) -> str:
        return f"worker-{self.name}"

    @property
    def log_path(self) -> Path:
        return self.folder / "worker.log"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@dataclass
class NetnsCluster:
    """A hub and worker hosts; `hub(fn)` runs `fn` in the hub's network namespace."""

    root: Path
    hub_namespace: str
    executor: ThreadPoolExecutor  # its one thread lives in the hub's network namespace
    workers: list[WorkerHost] = field(default_factory=list)
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)
    worker_tokens: dict[str, str] = field(default_factory=dict)  # a host's name -> its issued token

    def hub(self, fn: Callable[[], T]) -> T:
        """`fn()`, called in the hub's network namespace (its sockets are the hub's)."""
        return self.executor.submit(fn).result()

    @property
    def service_url(self) -> str:
        return f"http://{HUB_ADDRESS}:{SERVICE_PORT}"

    @property
    def database_url(self) -> str:
        return f"postgresql+psycopg://clade@{HUB_ADDRESS}:{POSTGRES_PORT}/postgres"

    @property
    def database_socket_url(self) -> str:
        """The same database through its unix socket: for the test process in the root namespace."""
        return f"postgresql://clade@/postgres?host={self.root / 'pg-socket'}&port={POSTGRES_PORT}"

    def request(
        self, method: str, path: str, token: str | None = "admin_token", **kwargs: Any
    ) -> httpx.Response:
        """An HTTP request to the service, made from inside the hub's namespace."""
        headers = {"Authorization": f"Bearer {self.secrets[token]}"} if token else {}

        def send() -> httpx.Response:
            with httpx.Client(base_url=self.service_url, headers=headers, timeout=60) as client:
                return client.request(method, path, **kwargs)

        return self.hub(send)

    def logs(self) -> str:
        parts = [f"--- {path.name}\n{path.read_text(errors='replace')[-3000:]}" for path in self._log_paths()]
        return "\n".join(parts)

    def _log_paths(self) -> list[Path]:
        return sorted(self.root.glob("*.log")) + [w.log_path for w in self.workers if w.log_path.exists()]


def require_namespaces() -> None:
    if shutil.which("ip") is None:
        raise NamespacesUnavailable(
            "`ip` (iproute2) is not installed: run .ci/services.sh or apt-get iproute2"
        )
    if os.geteuid() != 0:
        raise NamespacesUnavailable("network namespaces need root (`ip netns add`)")


def ip(*args: str) -> str:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise NamespacesUnavailable(f"`ip {' '.join(args)}` failed: {done.stderr.strip()}")
    return done.stdout


def namespace_inode(namespace: str) -> int:
    return os.stat(f"/run/netns/{namespace}").st_ino


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _delete_namespace(namespace: str) -> None:
    """Kill whatever still runs in it (only ours: the name says so), then delete it."""
    for pid in subprocess.run(
        ["ip", "netns", "pids", namespace], capture_output=True, text=True, check=False
    ).stdout.split():
        with suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)
    subprocess.run(["ip", "netns", "del", namespace], capture_output=True, check=False)


def remove_stale_namespaces() -> None:
    for line in ip("netns", "list").splitlines():
        name = line.split()[0] if line.strip() else ""
        found = _NAME.match(name)
        if found and not _pid_alive(int(found.group(1))):
            _delete_namespace(name)


def _enter_namespace(namespace: str) -> None:
    """Move the calling thread (only it) into `namespace`'s network namespace."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/run/netns/{namespace}", os.O_RDONLY)
    try:
        if libc.setns(fd, _CLONE_NEWNET) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"setns into {namespace}: {os.strerror(errno)}")
    finally:
        os.close(fd)


@contextmanager
def _namespaces(names: list[str]) -> Iterator[None]:
    try:
        for name in names:
            ip("netns", "add", name)
        yield
    finally:
        for name in reversed(names):
            _delete_namespace(name)


def _wire(hub: str, workers: list[WorkerHost]) -> None:
    ip("-n", hub, "link", "set", "lo", "up")
    ip("-n", hub, "link", "add", "hub0", "type", "bridge")
    ip("-n", hub, "addr", "add", f"{HUB_ADDRESS}/24", "dev", "hub0")
    ip("-n", hub, "link", "set", "hub0", "up")
    for index, host in enumerate(workers, start=1):
        port = f"to-w{index}"
        ip("-n", hub, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", host.namespace)
        ip("-n", hub, "link", "set", port, "master", "hub0", "up")
        ip("-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", "eth0")
        ip("-n", host.namespace, "link", "set", "eth0", "up")
        ip("-n", host.namespace, "link", "set", "lo", "up")


def _clean_env(extra: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("CLADE_")} | extra


def _wait(what: str, check: Callable[[], bool], cluster: NetnsCluster, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for name, process in cluster.processes.items():
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited with {process.returncode}\n{cluster.logs()}")
        if check():
            return
        time.sleep(0.1)
    raise RuntimeError(f"{what} not ready within {timeout_s}s\n{cluster.logs()}")


def _connects(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=1).close()
    except OSError:
        return False
    return True


def _healthy(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def _postgres_ready(url: str) -> bool:
    try:
        psycopg.connect(url, connect_timeout=2).close()
    except psycopg.OperationalError:
        return False
    return True


@contextmanager
def netns_cluster(script: Script, *, workers: int = 2, concurrency: int = 2) -> Iterator[NetnsCluster]:
    """The hub with Postgres, Redis, the scripted model (on `script`) and the service with its
    run driver; `workers` worker hosts running `clade worker`. Everything is stopped and deleted
    on exit, whatever happened."""
    require_namespaces()
    remove_stale_namespaces()
    prefix = f"clade{os.getpid()}"
    with ExitStack() as stack:
        root = Path(tempfile.mkdtemp(prefix="clade-netns-", dir="/tmp"))  # short: socket paths < 108 bytes
        stack.callback(shutil.rmtree, root, ignore_errors=True)
        root.chmod(0o755)  # Postgres (its own user) reaches its folders below
        suffix = root.name[-6:].replace("_", "x")  # mkdtemp may put "_" in; no host name may have one
        hosts = [
            WorkerHost(f"{prefix}-w{i}", f"{SUBNET}.{10 + i}", f"w{i}-{suffix}", root / f"w{i}")
            for i in range(1, workers + 1)
        ]
        hub_namespace = f"{prefix}-hub"
        stack.enter_context(_namespaces([hub_namespace, *(h.namespace for h in hosts)]))
        _wire(hub_namespace, hosts)
        executor = stack.enter_context(
            ThreadPoolExecutor(max_workers=1, initializer=_enter_namespace, initargs=(hub_namespace,))
        )
        cluster = NetnsCluster(root=root, hub_namespace=hub_namespace, executor=executor, workers=hosts)
        stack.callback(_remove_sandboxes, hosts)  # (exit runs these last first) once nothing makes more
        stack.callback(_stop_all, cluster)
        _start_hub(cluster, script)
        for host in hosts:  # one worker token per machine, issued by the admin (docs/operations.md)
            issued = cluster.request("POST", "/api/admin/worker-tokens", json={"name": host.name})
            assert issued.status_code == 201, issued.text
            cluster.worker_tokens[host.name] = issued.json()["token"]
        for host in hosts:
            _start_worker(cluster, host, concurrency)
        for host in hosts:  # every host takes jobs from the first one on
            _wait(f"worker {host.name}", lambda host=host: " ready." in host.log(), cluster, timeout_s=120)
        yield cluster


def _spawn(
    cluster: NetnsCluster,
    name: str,
    namespace: str,
    argv: list[str],
    env: dict[str, str],
    *,
    log_path: Path | None = None,
    hostname: str | None = None,
    as_postgres: bool = False,
) -> subprocess.Popen[bytes]:
    command = ["ip", "netns", "exec", namespace]
    if hostname:  # a host name of its own: a new UTS namespace, then exec the command
        command += ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', hostname]
    if as_postgres:
        command += stores.as_postgres()
    path = log_path or cluster.root / f"{name}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab") as log:
        process = subprocess.Popen(
            command + argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    cluster.processes[name] = process
    return process


def _start_hub(cluster: NetnsCluster, script: Script) -> None:
    root, hub = cluster.root, cluster.hub_namespace
    pg_bin, data, sockets = stores.postgres_bin(), root / "pg", root / "pg-socket"
    sockets.mkdir()
    shutil.chown(sockets, "postgres", "postgres")
    stores.init_postgres(data)
    with (data / "pg_hba.conf").open("a") as hba:  # initdb trusts loopback only; here, the hub's subnet
        hba.write(f"host all all {SUBNET}.0/24 trust\n")
    postgres_argv = [str(pg_bin / "postgres"), "-D", str(data), "-k", str(sockets), "-p", str(POSTGRES_PORT)]
    postgres_argv += [
        "-c",
        f"listen_addresses={HUB_ADDRESS}",
        "-c",
        "fsync=off",
        "-c",
        "full_page_writes=off",
    ]
    _spawn(cluster, "postgres", hub, postgres_argv, _clean_env({}), as_postgres=True)
    redis_argv = ["redis-server", "--bind", HUB_ADDRESS, "--port", str(REDIS_PORT)]
    redis_argv += ["--save", "", "--appendonly", "no", "--protected-mode", "no"]
    _spawn(cluster, "redis", hub, redis_argv, _clean_env({}))
    script_path = root / "script.json"
    script_path.write_text(script.model_dump_json())
    model_argv = [sys.executable, "-m", "worker.llm.scripted", "--script", str(script_path)]
    model_argv += ["--host", HUB_ADDRESS, "--port", str(MODEL_PORT), "--api-key", MODEL_KEY]
    _spawn(cluster, "scripted-model", hub, model_argv, _clean_env({}))
    _wait("Postgres", lambda: _postgres_ready(cluster.database_socket_url), cluster)
    _wait("Redis", lambda: cluster.hub(lambda: _connects(HUB_ADDRESS, REDIS_PORT)), cluster)
    service_env = _clean_env(
        {
            "CLADE_DATA_DIR": str(root / "hub"),
            "CLADE_SERVICE_URL": cluster.service_url,
            "CLADE_DATABASE_URL": cluster.database_url,
            "CLADE_BROKER_URL": f"redis://{HUB_ADDRESS}:{REDIS_PORT}/0",
            "CLADE_RUN_DRIVER_ENABLED": "true",
            "CLADE_DRIVER_INTERVAL_S": "0.5",
        }
    )
    _spawn(cluster, "service", hub, [sys.executable, "-m", "cli.main", "serve"], service_env)
    _wait("the service", lambda: cluster.hub(lambda: _healthy(f"{cluster.service_url}/api/health")), cluster)
    _wait("the model", lambda: cluster.hub(lambda: _connects(HUB_ADDRESS, MODEL_PORT)), cluster)
    cluster.secrets = json.loads((root / "hub" / "secrets.json").read_text())


def worker_settings(cluster: NetnsCluster, host: WorkerHost) -> dict[str, str]:
    """Everything a worker on another machine is given (docs/operations.md: Running on several machines)."""
    return {
        "CLADE_BROKER_URL": f"redis://{HUB_ADDRESS}:{REDIS_PORT}/0",
        "CLADE_SERVICE_URL": cluster.service_url,
        "CLADE_WORKER_TOKEN": cluster.worker_tokens[host.name],  # its own, never secrets.json's
        "CLADE_LLM_BASE_URL": f"http://{HUB_ADDRESS}:{MODEL_PORT}/v1",
        "CLADE_LLM_API_KEY": MODEL_KEY,
        "CLADE_WORKER_NAME": host.name,
        "CLADE_DATA_DIR": str(host.folder / "data"),
        "CLADE_SOCKET_DIR": str(host.folder / "sockets"),
    }


def _start_worker(cluster: NetnsCluster, host: WorkerHost, concurrency: int) -> None:
    (host.folder / "sockets").mkdir(parents=True)
    argv = [sys.executable, "-m", "cli.main", "worker", "--concurrency", str(concurrency)]
    env = _clean_env(worker_settings(cluster, host))
    _spawn(cluster, host.owner, host.namespace, argv, env, log_path=host.log_path, hostname=host.hostname)


def _stop_all(cluster: NetnsCluster) -> None:
    """Workers, service and model first, then the stores they use; SIGKILL whatever is slow to go."""
    stores = ("postgres", "redis")
    users = [p for name, p in cluster.processes.items() if name not in stores]
    _stop([p for p in users if p is not None])
    _stop([cluster.processes[name] for name in stores if name in cluster.processes])


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        _signal_group(process, signal.SIGTERM)
    deadline = time.monotonic() + 20
    for process in processes:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal_group(process, signal.SIGKILL)
            process.wait(timeout=30)


def _signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    with suppress(ProcessLookupError):  # already gone with its whole group
        os.killpg(process.pid, signum)


def _remove_sandboxes(hosts: list[WorkerHost]) -> None:
    backend = get_backend("docker", owner="netns-teardown")
    for host in hosts:
        backend.remove_orphans(host.owner)
