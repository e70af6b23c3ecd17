"""Postgres and Redis servers of a test's own, in a folder of their own, that it may stop and
start again (a restart mid-run) without touching the machine's shared ones.

Postgres runs as the `postgres` user (it refuses root) from a cluster made with `initdb`.
Neither server can take a bound socket or report the port it got: made with port 0, each first
starts on a free port, and on another if it could not bind that one (another process took it
in between); a restart keeps the port. Readiness asks the server for its own folder, so a test
never talks to another process's server on that port.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import psycopg
import redis

from tests.servers import free_port


def postgres_bin() -> Path:
    """The newest PostgreSQL server's bin folder."""
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"), key=lambda p: int(p.parts[-3]))
    if not versions:
        raise RuntimeError("no PostgreSQL server under /usr/lib/postgresql")
    return versions[-1].parent


def as_postgres() -> list[str]:
    """A command prefix that runs the rest as the `postgres` user."""
    user = pwd.getpwnam("postgres")
    return ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"]


def init_postgres(data: Path, user: str = "clade") -> None:
    """A new cluster in `data` (made here, owned by postgres) whose `user` is trusted."""
    data.mkdir(parents=True)
    shutil.chown(data, "postgres", "postgres")
    subprocess.run(
        [*as_postgres(), str(postgres_bin() / "initdb"), "-D", str(data), "-U", user, "-A", "trust", "-N"],
        check=True,
        capture_output=True,
    )


def wait_until(what: str, check: Callable[[], bool], timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not ready within {timeout_s}s")
        time.sleep(0.1)


class PortTaken(RuntimeError):
    """The server exited because another process holds its port."""


PORT_ATTEMPTS = 5


def raise_exit_cause(name: str, log_path: Path, logged: int) -> NoReturn:
    """Why a server that has just exited did so, from what it logged since `logged` bytes."""
    with log_path.open("rb") as log:
        log.seek(logged)
        tail = log.read().decode(errors="replace")
    if "Address already in use" in tail:
        raise PortTaken(tail[-500:])
    raise RuntimeError(f"{name} exited:\n{tail[-2000:]}")


def start_on_a_port(first: bool, port: int, start: Callable[[int], None]) -> int:
    """`start(port)`; on a first start with port 0, on a free port, and on another while the
    one picked was taken before the server bound it. The port it runs on."""
    if not (first and port == 0):
        start(port)
        return port
    for _ in range(PORT_ATTEMPTS):
        picked = free_port()
        try:
            start(picked)
        except PortTaken:
            continue
        return picked
    raise RuntimeError(f"the server found each of {PORT_ATTEMPTS} free ports taken before it bound it")


@dataclass
class LocalPostgres:
    """A Postgres cluster in `folder` on 127.0.0.1:`port` (0: a free one, fixed once started);
    `restart()` is a fast shutdown and start."""

    folder: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)
    started: bool = field(default=False, init=False)

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://clade@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        data, sockets = self.folder / "data", self.folder / "sockets"
        if not data.exists():
            self.folder.mkdir(parents=True, exist_ok=True)
            self.folder.chmod(0o755)  # postgres (its own user) reaches the folders below
            init_postgres(data)
            sockets.mkdir()
            shutil.chown(sockets, "postgres", "postgres")
        self.port = start_on_a_port(not self.started, self.port, self._start_on)
        self.started = True

    def _start_on(self, port: int) -> None:
        data, sockets, log_path = self.folder / "data", self.folder / "sockets", self.folder / "postgres.log"
        argv = [str(postgres_bin() / "postgres"), "-D", str(data), "-k", str(sockets), "-p", str(port)]
        argv += ["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "full_page_writes=off"]
        logged = log_path.stat().st_size if log_path.exists() else 0
        with log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [*as_postgres(), *argv], stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        wait_until("Postgres", lambda: self._ready(port, log_path, logged))

    def _ready(self, port: int, log_path: Path, logged: int) -> bool:
        if self.process is not None and self.process.poll() is not None:
            self.process = None
            raise_exit_cause("postgres", log_path, logged)
        try:
            with psycopg.connect(f"postgresql://clade@127.0.0.1:{port}/postgres", connect_timeout=2) as conn:
                found = conn.execute("SHOW data_directory").fetchone()
        except psycopg.OperationalError:
            return False
        # Ours, not another process's server on this port.
        return found is not None and Path(str(found[0])).resolve() == (self.folder / "data").resolve()

    def stop(self) -> None:
        # SIGINT: Postgres's fast shutdown (open transactions are rolled back, clients cut off).
        _stop(self.process, signal.SIGINT)
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


@dataclass
class LocalRedis:
    """A redis-server on 127.0.0.1:`port` (0: a free one, fixed once started) with its files in
    `folder`, configured as Redis's defaults are (a snapshot written at shutdown): `restart()` is
    SIGTERM and start."""

    folder: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)
    started: bool = field(default=False, init=False)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.port = start_on_a_port(not self.started, self.port, self._start_on)
        self.started = True

    def _start_on(self, port: int) -> None:
        argv = ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--dir", str(self.folder)]
        argv += ["--protected-mode", "no"]
        log_path = self.folder / "redis.log"
        logged = log_path.stat().st_size if log_path.exists() else 0
        with log_path.open("ab") as log:
            self.process = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        wait_until("Redis", lambda: self._ready(port, log_path, logged))

    def _ready(self, port: int, log_path: Path, logged: int) -> bool:
        if self.process is not None and self.process.poll() is not None:
            self.process = None
            raise_exit_cause("redis-server", log_path, logged)
        try:
            url = f"redis://127.0.0.1:{port}/0"
            with redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=2) as client:
                found = client.config_get("dir").get("dir")
        except (redis.ConnectionError, redis.TimeoutError):  # not up yet, or not a Redis
            return False
        # Ours, not another process's server on this port.
        return found is not None and Path(str(found)).resolve() == self.folder.resolve()

    def stop(self) -> None:
        _stop(self.process, signal.SIGTERM)
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


def _stop(process: subprocess.Popen[bytes] | None, signum: int) -> None:
    if process is None or process.poll() is not None:
        return
    os.killpg(process.pid, signum)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
