"""Helpers that start real service processes for tests and wait until they answer."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# The server and role that .ci/run sets up; point CLADE_TEST_POSTGRES_URL elsewhere to use another.
DEFAULT_POSTGRES_URL = "postgresql://clade:clade@127.0.0.1:5432/postgres"


def postgres_admin_url() -> str:
    return os.environ.get("CLADE_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)


@contextmanager
def fresh_postgres_database() -> Iterator[str]:
    """A new, empty database on the test server; dropped afterwards."""
    admin = postgres_admin_url()
    name = f"clade_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base, _, _ = admin.rpartition("/")
    try:
        yield f"postgresql+psycopg://{base.split('://', 1)[1]}/{name}"
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass
class ServiceProcess:
    url: str
    data_dir: Path
    env: dict[str, str]
    process: subprocess.Popen[bytes]
    log_path: Path

    @property
    def secrets(self) -> dict[str, str]:
        data: dict[str, str] = json.loads((self.data_dir / "secrets.json").read_text())
        return data

    @property
    def admin(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {self.secrets['admin_token']}"}, timeout=60
        )

    @property
    def worker(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {self.secrets['worker_token']}"}, timeout=60
        )

    @property
    def anonymous(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=60)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, kill: bool = False) -> None:
        if self.process.poll() is None:
            if kill:
                self.process.kill()
            else:
                self.process.terminate()
            self.process.wait(timeout=30)


def service_env(data_dir: Path, database_url: str | None, port: int, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLADE_")}
    env |= {
        "CLADE_DATA_DIR": str(data_dir),
        "CLADE_SERVICE_URL": f"http://127.0.0.1:{port}",
        "CLADE_RUN_DRIVER_ENABLED": "false",
    }
    if database_url:
        env["CLADE_DATABASE_URL"] = database_url
    return env | extra


def start_service(env: dict[str, str], timeout: float = 60.0) -> ServiceProcess:
    data_dir = Path(env["CLADE_DATA_DIR"])
    data_dir.mkdir(parents=True, exist_ok=True)
    log_path = data_dir / f"service-{uuid.uuid4().hex[:6]}.log"
    url = env["CLADE_SERVICE_URL"]
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "serve"], env=env, stdout=log, stderr=subprocess.STDOUT
        )
    service = ServiceProcess(url=url, data_dir=data_dir, env=env, process=process, log_path=log_path)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"service exited with {process.returncode}:\n{service.log()}")
        try:
            if httpx.get(f"{url}/api/health", timeout=2).status_code == 200:
                return service
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    service.stop(kill=True)
    raise RuntimeError(f"service did not answer within {timeout}s:\n{service.log()}")
