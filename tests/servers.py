"""The service under test: its app in this process, or a real process when the process matters.

Both give the same clients (`admin`, `worker`, `anonymous`); the in-process one sends each
request straight to the ASGI app on an event loop thread, with no socket and no server.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import psycopg
from anyio.from_thread import BlockingPortal, start_blocking_portal
from fastapi import FastAPI
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

from contracts.jobs import JOB_SECRET_HEADER
from contracts.settings import Settings
from service.api.app import create_app
from service.db.migrate import upgrade


def free_port() -> int:
    """A port nothing listens on now: for a URL no process binds (the in-process app) or one that
    must refuse. A server a test starts is handed a bound socket instead (`listening_socket`)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def closed_port() -> Iterator[int]:
    """A port that refuses every connection while the block runs: bound here and never listened
    on, so no other process can start serving on it meanwhile (as on a busy machine)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def listening_socket(port: int = 0) -> socket.socket:
    """A TCP socket listening on 127.0.0.1:`port` (0: one the kernel picks), to hand to a server
    process: bound here, so no other process can take the port before the server serves on it."""
    sock = socket.socket()
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart's old connections
        sock.bind(("127.0.0.1", port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def on_a_free_port(
    start: Callable[[int], subprocess.Popen[bytes]],
    ready: Callable[[int], bool],
    what: str,
    *,
    timeout_s: float = 120,
    attempts: int = 5,
) -> tuple[subprocess.Popen[bytes], int]:
    """A server that can neither take a bound socket nor report the port it got (Flower, a worker's
    metrics), started on a free port, and on another while it exits before it is ready: another
    process took the port between the pick and its bind. Returns the process and its port."""
    for _ in range(attempts):
        port = free_port()
        process = start(port)
        deadline = time.monotonic() + timeout_s
        while process.poll() is None:
            if ready(port) and process.poll() is None:
                return process, port
            if time.monotonic() > deadline:
                process.kill()
                process.wait(timeout=30)
                raise RuntimeError(f"{what} was not ready on port {port} within {timeout_s:.0f}s")
            time.sleep(0.2)
    raise RuntimeError(f"{what} exited before it was ready, on each of {attempts} free ports; see its log")


# The server and role that .ci/run sets up; point CLADE_TEST_POSTGRES_URL elsewhere to use another.
# The job secret of every step and evaluation the tests' helpers dispatch by hand (the driver makes
# a random one per dispatch); the `worker` client shows it on each request.
JOB_SECRET = "test-job-secret-" + "0" * 32
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


@dataclass(frozen=True)
class SharedPostgres:
    """One migrated database for a whole session, emptied before each test that takes it."""

    url: str
    tables: tuple[str, ...]

    def empty(self) -> None:
        """Leave the schema, remove every row: as a freshly migrated database, and faster to get."""
        name = self.url.rpartition("/")[2]
        with psycopg.connect(postgres_admin_url(), autocommit=True) as conn:
            # A connection a test left open would hold locks; DROP DATABASE ... WITH (FORCE) ends them too.
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            )
        with psycopg.connect(
            self.url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True
        ) as conn:
            conn.execute("SET lock_timeout = '30s'")
            if self.tables:
                conn.execute(f"TRUNCATE {', '.join(self.tables)} RESTART IDENTITY CASCADE")


@contextmanager
def shared_postgres_database() -> Iterator[SharedPostgres | None]:
    """A migrated database to share between tests, or None when migrations wrote rows (then each
    test needs its own fresh database, since emptying the tables would remove those rows)."""
    with fresh_postgres_database() as url:
        upgrade(url)
        plain = url.replace("postgresql+psycopg://", "postgresql://")
        with psycopg.connect(plain, autocommit=True) as conn:
            names = [
                str(row[0])
                for row in conn.execute(
                    "SELECT tablename FROM pg_tables"
                    " WHERE schemaname = 'public' AND tablename <> 'alembic_version'"
                )
            ]
            seeded = any(
                conn.execute(f'SELECT EXISTS (SELECT 1 FROM "{name}")').fetchone() == (True,)
                for name in names
            )
        yield None if seeded else SharedPostgres(url=url, tables=tuple(f'"{name}"' for name in names))


class ServiceClients:
    """HTTP clients for a service with the tokens kept in its data directory."""

    url: str
    data_dir: Path
    env: dict[str, str]

    def transport(self) -> httpx.BaseTransport | None:
        """None: real connections to `url`."""
        return None

    @property
    def database_url(self) -> str:
        return self.env["CLADE_DATABASE_URL"]

    @property
    def secrets(self) -> dict[str, str]:
        data: dict[str, str] = json.loads((self.data_dir / "secrets.json").read_text())
        return data

    def client(self, token: str | None = None, *, job_secret: str | None = None) -> httpx.Client:
        """A client with the named token (admin_token, worker_token, read_token), or none, and a
        job secret to show (X-Clade-Job-Secret), or none."""
        headers = {"Authorization": f"Bearer {self.secrets[token]}"} if token else {}
        if job_secret is not None:
            headers[JOB_SECRET_HEADER] = job_secret
        return httpx.Client(base_url=self.url, headers=headers, timeout=60, transport=self.transport())

    @property
    def admin(self) -> httpx.Client:
        return self.client("admin_token")

    @property
    def worker(self) -> httpx.Client:
        """The local worker token, showing JOB_SECRET: the secret of the jobs helpers dispatch."""
        return self.client("worker_token", job_secret=JOB_SECRET)

    @property
    def anonymous(self) -> httpx.Client:
        return self.client()


@dataclass
class ServiceProcess(ServiceClients):
    url: str
    data_dir: Path
    env: dict[str, str]
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, kill: bool = False) -> None:
        """SIGTERM, or SIGKILL with `kill`. A killed service's port stays held by this process for
        a restart from `env` (another process's connection could take it otherwise)."""
        if self.process.poll() is None:
            if kill:
                self.process.kill()
            else:
                self.process.terminate()
            self.process.wait(timeout=30)
        if not kill:
            _release_port(urlparse(self.url).port)


class _AppTransport(httpx.BaseTransport):
    """Sends each request to the ASGI app on the portal's event loop, and reads the whole answer."""

    def __init__(self, app: FastAPI, portal: BlockingPortal) -> None:
        # Unhandled errors come back as 500 responses, as from a live server.
        self.asgi = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        self.portal = portal

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        async def send() -> tuple[httpx.Response, bytes]:
            response = await self.asgi.handle_async_request(request)
            body = b"".join([part async for part in response.stream])  # type: ignore[union-attr]
            return response, body

        response, body = self.portal.call(send)
        return httpx.Response(
            response.status_code, headers=response.headers, stream=httpx.ByteStream(body), request=request
        )


@dataclass
class AppService(ServiceClients):
    """The service's app (run driver off) in this process, started as `clade serve` starts it."""

    url: str
    data_dir: Path
    env: dict[str, str]
    app_transport: httpx.BaseTransport

    def transport(self) -> httpx.BaseTransport:
        return self.app_transport


class _EnvSettings(Settings):
    """Settings from the given values only, as a process started with exactly that environment."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)


def settings_from_env(env: dict[str, str]) -> Settings:
    """What `get_settings()` builds in a service process started with `env`."""
    values: dict[str, Any] = {
        key.removeprefix("CLADE_").lower(): value for key, value in env.items() if key.startswith("CLADE_")
    }
    return _EnvSettings(**values).with_tokens()


@contextmanager
def app_service(env: dict[str, str]) -> Iterator[AppService]:
    """The app built from `env` with its lifespan running; requests go to it in this process."""
    settings = settings_from_env(env)
    app = create_app(settings)
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(app.router.lifespan_context(app)),
    ):
        yield AppService(
            url=env["CLADE_SERVICE_URL"],
            data_dir=settings.data_dir,
            env=env,
            app_transport=_AppTransport(app, portal),
        )


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


# The listening sockets of services started here, by port: kept open while their service may be
# restarted, so that a killed service's port cannot be taken before the restart binds it (CI saw
# "address already in use" when an outgoing connection got the freed port).
_LISTENERS: dict[int, socket.socket] = {}


def _held_listener(port: int) -> socket.socket:
    held = _LISTENERS.get(port)
    if held is not None:
        return held
    listener = listening_socket(port)
    _LISTENERS[int(listener.getsockname()[1])] = listener
    return listener


def _release_port(port: int | None) -> None:
    held = _LISTENERS.pop(port or 0, None)
    if held is not None:
        held.close()


def start_service(env: dict[str, str], timeout: float = 180.0) -> ServiceProcess:
    """`clade serve` on the port of `env`'s service URL, or on one the kernel picks when that port
    is 0; the process's `url` and `env` name the port it got (so a restart from `env` keeps it)."""
    data_dir = Path(env["CLADE_DATA_DIR"])
    data_dir.mkdir(parents=True, exist_ok=True)
    log_path = data_dir / f"service-{uuid.uuid4().hex[:6]}.log"
    listener = _held_listener(urlparse(env["CLADE_SERVICE_URL"]).port or 0)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    env = env | {"CLADE_SERVICE_URL": url}
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "serve", "--fd", str(listener.fileno())],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            pass_fds=(listener.fileno(),),
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
