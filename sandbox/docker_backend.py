"""The Docker backend: one hardened, idle container per sandbox (see `docker_sandbox`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import docker
from docker.errors import DockerException, ImageNotFound, NotFound
from docker.types import Mount as DockerMount

from sandbox.base import (
    BACKEND_LABEL,
    LABEL_PREFIX,
    OWNER_LABEL,
    ROLE_LABEL,
    SandboxError,
    SandboxSpec,
    SandboxUnavailable,
)
from sandbox.docker_sandbox import KEEPER_NAME, KEEPER_SCRIPT, SANDBOX_USER, DockerSandbox

SANDBOX_ROLE = "sandbox"
CREATED_LABEL = f"{LABEL_PREFIX}.created"


class DockerBackend:
    """Starts `DockerSandbox`es.

    `owner` labels every sandbox so that a worker can find the ones it left behind
    (`spec.labels` may set a different owner for one sandbox). Pass a docker
    `client`, or a `base_url`; with neither, the environment's engine is used.
    """

    name: str = "docker"

    def __init__(
        self,
        client: Any | None = None,
        *,
        base_url: str | None = None,
        owner: str = "clade",
        kill_grace_s: float = 10.0,
        file_timeout_s: float = 60.0,
    ) -> None:
        self._client = client if client is not None else connect(base_url)
        self.owner = owner
        self._kill_grace_s = kill_grace_s
        self._file_timeout_s = file_timeout_s

    def start(self, spec: SandboxSpec) -> DockerSandbox:
        labels = {
            OWNER_LABEL: self.owner,
            **spec.labels,
            ROLE_LABEL: SANDBOX_ROLE,
            BACKEND_LABEL: self.name,
            CREATED_LABEL: datetime.now(UTC).isoformat(timespec="seconds"),
        }
        with _engine_errors(f"starting a sandbox from {spec.image}"):
            container = self._client.api.create_container(
                spec.image,
                entrypoint=["sh", "-c", KEEPER_SCRIPT, KEEPER_NAME],
                command=[],
                user=SANDBOX_USER,
                environment=dict(spec.env),
                working_dir=spec.workdir,
                labels=labels,
                host_config=self._client.api.create_host_config(**_host_config(spec)),
            )
            container_id = str(container["Id"])
            sandbox = DockerSandbox(
                self._client,
                container_id,
                spec,
                kill_grace_s=self._kill_grace_s,
                file_timeout_s=self._file_timeout_s,
            )
            try:
                self._client.api.start(container_id)
            except (DockerException, OSError):
                sandbox.close()
                raise
        return sandbox

    def remove_orphans(self, owner: str | None = None) -> list[str]:
        """Remove this backend's sandboxes (all, or one owner's); return their ids."""
        labels = [f"{ROLE_LABEL}={SANDBOX_ROLE}", f"{BACKEND_LABEL}={self.name}"]
        labels.append(OWNER_LABEL if owner is None else f"{OWNER_LABEL}={owner}")
        removed: list[str] = []
        with _engine_errors("removing orphaned sandboxes"):
            for found in self._client.api.containers(all=True, filters={"label": labels}):
                try:
                    self._client.api.remove_container(found["Id"], force=True, v=True)
                except NotFound:
                    continue  # removed concurrently
                removed.append(str(found["Id"]))
        return removed


def connect(base_url: str | None = None) -> Any:
    """A Docker client for `base_url`, or the environment's engine (DOCKER_HOST) when None."""
    try:
        client = docker.DockerClient(base_url=base_url) if base_url else docker.from_env()
        client.ping()
    except (DockerException, OSError) as exc:
        raise SandboxUnavailable(f"Docker engine unreachable: {exc}") from exc
    return client


def _host_config(spec: SandboxSpec) -> dict[str, Any]:
    memory = f"{spec.memory_mb}m"
    # Docker mounts a tmpfs noexec unless told otherwise.
    tmp_exec = "exec" if spec.tmpfs_exec else "noexec"
    return {
        "network_mode": "none",
        "mem_limit": memory,
        "memswap_limit": memory,  # equal: no swap
        "nano_cpus": int(spec.cpus * 1e9),
        "pids_limit": spec.pids,
        "read_only": True,
        "tmpfs": {"/tmp": f"rw,{tmp_exec},nosuid,nodev,size={spec.tmpfs_mb}m,mode=1777"},
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "init": True,
        "ipc_mode": "private",
        "mounts": [
            DockerMount(
                target=mount.target,
                source=str(mount.source.absolute()),
                type="bind",
                read_only=mount.read_only,
            )
            for mount in spec.mounts
        ],
    }


@contextmanager
def _engine_errors(doing: str) -> Iterator[None]:
    try:
        yield
    except ImageNotFound as exc:
        raise SandboxUnavailable(f"{doing}: image not found ({exc.explanation})") from exc
    except (DockerException, OSError) as exc:
        raise SandboxError(f"{doing}: {exc}") from exc
