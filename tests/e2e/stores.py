"""Postgres and Redis servers of a test's own, in a folder of their own, that it may stop and
start again (a restart mid-run) without touching the machine's shared ones.

Postgres runs as the `postgres` user (it refuses root) from a cluster made with `initdb`.
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

import psycopg
import redis


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


def wait_until(what: str, check: Callable[[], bool], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not ready within {timeout_s}s")
        time.sleep(0.1)


@dataclass
class LocalPostgres:
    """A Postgres cluster in `folder` on 127.0.0.1:`port`; `restart()` is a fast shutdown and start."""

    folder: Path
    port: int
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)

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
        argv = [str(postgres_bin() / "postgres"), "-D", str(data), "-k", str(sockets), "-p", str(self.port)]
        argv += ["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "full_page_writes=off"]
        with (self.folder / "postgres.log").open("ab") as log:
            self.process = subprocess.Popen(
                [*as_postgres(), *argv], stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        wait_until("Postgres", self._ready)

    def _ready(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            raise RuntimeError(f"postgres exited:\n{(self.folder / 'postgres.log').read_text()[-2000:]}")
        try:
            psycopg.connect(f"postgresql://clade@127.0.0.1:{self.port}/postgres", connect_timeout=2).close()
        except psycopg.OperationalError:
            return False
        return True

    def stop(self) -> None:
        # SIGINT: Postgres's fast shutdown (open transactions are rolled back, clients cut off).
        _stop(self.process, signal.SIGINT)
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


@dataclass
class LocalRedis:
    """A redis-server on 127.0.0.1:`port` with its files in `folder`, configured as Redis's
    defaults are (a snapshot written at shutdown): `restart()` is SIGTERM and start."""

    folder: Path
    port: int
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        argv = ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(self.folder)]
        argv += ["--protected-mode", "no"]
        with (self.folder / "redis.log").open("ab") as log:
            self.process = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        wait_until("Redis", self._ready)

    def _ready(self) -> bool:
        try:
            with redis.Redis.from_url(self.url, socket_connect_timeout=1) as client:
                return bool(client.ping())
        except redis.ConnectionError:
            return False

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
