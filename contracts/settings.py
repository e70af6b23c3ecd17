"""One settings object for every Clade process, built once and passed in.

Values come from `CLADE_*` environment variables. Secrets are never given
defaults in code: a token that is not configured is generated once and kept
in the data directory (mode 0600), so a fresh machine works and no two
installations share a secret.
"""

from __future__ import annotations

import ipaddress
import json
import os
import secrets
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_PORT = 8420
TOKEN_NAMES = ("admin_token", "worker_token", "read_token")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CLADE_", extra="ignore")

    data_dir: Path = Field(default_factory=lambda: Path.home() / ".clade")
    database_url: str | None = None
    broker_url: str | None = None
    # An unacknowledged task is delivered again after this long (a worker died holding it).
    broker_visibility_timeout_s: int = 7200
    service_url: str = f"http://127.0.0.1:{DEFAULT_PORT}"

    admin_token: SecretStr | None = None
    worker_token: SecretStr | None = None
    read_token: SecretStr | None = None
    # None: reads need the read (or admin) token unless the service binds to loopback only
    # (reads_need_token); true or false decides it whatever the address.
    reads_require_token: bool | None = None

    # The HTTP server (service/api/connections.py): open connections at most (fewer when the
    # descriptor limit leaves less than fd_reserve for the rest), seconds a request's headers may
    # take to arrive, and seconds an idle kept-alive connection stays open.
    max_connections: int = Field(default=1000, ge=1)
    fd_reserve: int = Field(default=256, ge=0)
    header_timeout_s: float = Field(default=10.0, gt=0)
    keep_alive_timeout_s: float = Field(default=5.0, gt=0)

    # A request that needs a benchmark loaded waits this long, then answers 503 (the load goes on).
    benchmark_load_wait_s: float = Field(default=20.0, gt=0)

    max_patch_bytes: int = 2 * 1024 * 1024
    # Any request body, however it is framed (chunked bodies are counted as they arrive).
    max_upload_bytes: int = 64 * 1024 * 1024
    # An agent's code: all its files together, how many, and any one of them. They bound a seed
    # upload as it is unpacked (entries counted, folders included) and every child's tree.
    max_agent_bytes: int = 256 * 1024 * 1024
    max_agent_files: int = 20_000
    max_file_bytes: int = 64 * 1024 * 1024
    run_driver_enabled: bool = True
    driver_interval_s: float = 1.0
    # While driver ticks fail, the wait between them doubles from the interval up to this.
    driver_max_backoff_s: float = 60.0
    # A job unanswered this long past its hard time limit is sent again (lost with a broker or worker).
    driver_redispatch_margin_s: float = Field(default=120.0, ge=0)
    # /api/health answers 503 once the last successful tick is older; None: max(30 s, 10 intervals).
    driver_stale_after_s: float | None = None

    llm_base_url: str | None = None
    llm_api_key: SecretStr | None = None
    price_table_path: Path | None = None
    sandbox_backend: str = "docker"
    # A backend registered as not isolating agent code (sandbox/registry.py) runs only with this.
    sandbox_allow_unsafe: bool = False
    # What an agent may write to its folders (repository and output) in one sandbox, and how it
    # is held to it: "loop" (a loop-mounted ext4 image per sandbox; needs root), "watch" (a
    # watcher removes the sandbox past the limit), "auto" (loop when the worker can mount).
    sandbox_disk_mb: int = Field(default=2048, ge=16)
    sandbox_disk_enforcement: Literal["auto", "loop", "watch"] = "auto"
    # The most one sandbox may take, whatever a run or benchmark asks (None: this host's memory
    # less 1 GiB, its CPU count, 4096 pids); larger asks are lowered to these (sandbox/ceiling.py).
    sandbox_max_memory_mb: int | None = Field(default=None, ge=64)
    sandbox_max_cpus: float | None = Field(default=None, gt=0)
    sandbox_max_pids: int | None = Field(default=None, ge=8)
    # A worker's name (`clade worker --name` wins); unique among live workers. None: one made
    # for each process from the host name, the pid and a random suffix.
    worker_name: str | None = None
    # Where workers put each sandbox's LLM socket: a unix socket path must stay under 108 bytes,
    # and the Docker engine must see the same path (mount it when the worker runs in a container).
    socket_dir: Path = Path("/tmp")
    # Rootfs, wheels and the agent runtime (bind-mounted into sandboxes); default ~/.cache/clade/images
    image_cache_dir: Path | None = None
    # "json": one JSON object a line, with the run, step or evaluation id (contracts/logs.py).
    log_format: Literal["text", "json"] = "text"
    # A worker serves Prometheus metrics on this port (all interfaces); None: no metrics server.
    worker_metrics_port: int | None = Field(default=None, ge=1, le=65535)

    def reads_need_token(self, bind_host: str) -> bool:
        """Whether reads need a token for a service listening on `bind_host`."""
        if self.reads_require_token is not None:
            return self.reads_require_token
        return not binds_loopback_only(bind_host)

    @property
    def archive_path(self) -> Path:
        return self.data_dir / "archive.git"

    @property
    def resolved_driver_stale_after_s(self) -> float:
        if self.driver_stale_after_s is not None:
            return self.driver_stale_after_s
        return max(30.0, 10 * self.driver_interval_s)

    @property
    def tmp_dir(self) -> Path:
        """The service's scratch space (seed uploads, temporary indexes), emptied at every start."""
        return self.data_dir / "tmp"

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.data_dir / 'clade.db'}"

    @property
    def resolved_broker_url(self) -> str:
        """Redis (or any kombu URL) when configured, else the embedded file broker."""
        return self.broker_url or "filesystem://"

    @property
    def broker_folder(self) -> Path:
        return self.data_dir / "broker"

    @property
    def worker_metrics_dir(self) -> Path:
        """prometheus-client's multiprocess files: one per worker process, summed when scraped."""
        return self.data_dir / "worker-metrics"

    def with_tokens(self) -> Settings:
        """Fill unset tokens from the data directory's secrets file, creating it once."""
        missing = [name for name in TOKEN_NAMES if getattr(self, name) is None]
        if not missing:
            return self
        stored = load_or_create_secrets(self.data_dir)
        return self.model_copy(update={name: SecretStr(stored[name]) for name in missing})


def binds_loopback_only(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and `localhost`; a wildcard (0.0.0.0, ::) or any other address
    is reachable from elsewhere."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: whatever it resolves to may be reachable


def load_or_create_secrets(data_dir: Path) -> dict[str, str]:
    path = data_dir / "secrets.json"
    if path.exists():
        stored: dict[str, str] = json.loads(path.read_text())
        if all(name in stored for name in TOKEN_NAMES):
            return stored
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    stored = {name: secrets.token_urlsafe(32) for name in TOKEN_NAMES}
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(stored, handle)
    os.replace(tmp, path)
    return stored


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process's settings; only entry points call this, everything else takes them."""
    return Settings().with_tokens()
