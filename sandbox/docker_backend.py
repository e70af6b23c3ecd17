"""The Docker backend: one hardened, idle container per sandbox (see `docker_sandbox`), and
the images they start from (`docker_images`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import docker
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
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
from sandbox.ceiling import ResourceCeiling
from sandbox.docker_images import DockerImages
from sandbox.docker_sandbox import KEEPER_NAME, KEEPER_SCRIPT, SANDBOX_USER, DockerSandbox
from sandbox.liveness import ProcessStamp, this_process

SANDBOX_ROLE = "sandbox"
CREATED_LABEL = f"{LABEL_PREFIX}.created"


# How long a timed-out command's processes are swept with SIGKILL before the sandbox is removed
# instead: a fork bomb refilling its pids limit on a busy 2-core machine took more than 10 s.
KILL_GRACE_S = 30.0


class DockerBackend:
    """Starts `DockerSandbox`es.

    `owner` labels every sandbox (`spec.labels` may set a different owner for one sandbox),
    and so does the stamp of the process that starts it, which lets any other process of
    this host tell when that process is gone (`sandbox.liveness`). Pass a docker `client`,
    or a `base_url`; with neither, the environment's engine is used. Every spec is clamped
    to `ceiling` (default: this host's memory less a reserve, its CPUs; `sandbox.ceiling`).
    `writable_limit_mb` watches every sandbox's read-write mounts unless its spec says otherwise
    (`SandboxSpec.writable_limit_mb`); None: not watched. `images` builds and finds images on
    the same engine, caching their inputs in `image_cache_dir` (default: ~/.cache/clade/images).
    """

    name: str = "docker"

    def __init__(
        self,
        client: Any | None = None,
        *,
        base_url: str | None = None,
        owner: str = "clade",
        kill_grace_s: float = KILL_GRACE_S,
        file_timeout_s: float = 60.0,
        ceiling: ResourceCeiling | None = None,
        writable_limit_mb: int | None = None,
        image_cache_dir: Path | None = None,
    ) -> None:
        self._client = client if client is not None else connect(base_url)
        self.images = DockerImages(self._client, cache_dir=image_cache_dir)
        self.ceiling = ceiling or ResourceCeiling.for_host()
        self.writable_limit_mb = writable_limit_mb
        self.owner = owner
        self._kill_grace_s = kill_grace_s
        self._file_timeout_s = file_timeout_s

    def start(self, spec: SandboxSpec) -> DockerSandbox:
        spec = self.ceiling.clamp(spec)
        labels = {
            OWNER_LABEL: self.owner,
            **spec.labels,
            # Stamped at start, not at construction: a backend made before a fork starts
            # sandboxes in the children, and each child is their owner process.
            **this_process().labels(),
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
        limit = spec.writable_limit_mb if spec.writable_limit_mb is not None else self.writable_limit_mb
        if limit:
            sandbox.guard_writes(limit)
        return sandbox

    def remove_orphans(self, owner: str | None = None) -> list[str]:
        """Remove this backend's sandboxes (all, or one owner's), live or not; return their ids."""
        labels = [f"{ROLE_LABEL}={SANDBOX_ROLE}", f"{BACKEND_LABEL}={self.name}"]
        labels.append(OWNER_LABEL if owner is None else f"{OWNER_LABEL}={owner}")
        with _engine_errors("removing orphaned sandboxes"):
            found = self._client.api.containers(all=True, filters={"label": labels})
            return self._remove([str(container["Id"]) for container in found])

    def remove_abandoned(self) -> list[str]:
        """Remove this backend's sandboxes whose starting process is gone, whatever their owner.

        Also those carrying this backend's own owner name whose process cannot be looked up
        from here (stamped in another pid namespace, e.g. by a worker container before its
        restart, or not stamped at all): an owner name is unique among live workers, so they
        are a previous process's under the same name.
        """
        labels = [f"{ROLE_LABEL}={SANDBOX_ROLE}", f"{BACKEND_LABEL}={self.name}"]
        me = this_process()
        with _engine_errors("removing abandoned sandboxes"):
            found = self._client.api.containers(all=True, filters={"label": labels})
            gone = [str(c["Id"]) for c in found if self._abandoned(c.get("Labels") or {}, me)]
            return self._remove(gone)

    def _abandoned(self, labels: dict[str, str], me: ProcessStamp) -> bool:
        stamp = ProcessStamp.from_labels(labels)
        if stamp is not None and stamp.is_gone(seen_from=me):
            return True
        unseen = stamp is None or not stamp.visible_from(me)
        return unseen and labels.get(OWNER_LABEL) == self.owner

    def _remove(self, container_ids: list[str]) -> list[str]:
        removed: list[str] = []
        for container_id in container_ids:
            try:
                self._client.api.remove_container(container_id, force=True, v=True)
            except NotFound:
                continue  # removed concurrently
            except APIError as exc:
                if exc.status_code == 409:  # another worker is removing it at this moment
                    continue
                raise
            removed.append(container_id)
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
