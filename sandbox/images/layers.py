"""Commit a Python layer onto an image, offline: wheels go in by archive, pip never sees a network.

Every build container runs with `network_mode="none"` and no capabilities; it is
labelled with its builder (host, process id and the process's start time), so that the
containers of an interrupted build can be found and removed, and only those: another
process's build on the same engine is never touched.
"""

from __future__ import annotations

import os
import socket
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docker.errors import APIError, DockerException, NotFound

from sandbox.base import BACKEND_LABEL, LABEL_PREFIX, OWNER_LABEL, ROLE_LABEL, SandboxError

Progress = Callable[[str], None]

VENV = "/opt/clade-venv"
BUILD_ROLE = "image-build"
IMAGE_ROLE = "image"
_WHEELS_IN_CONTAINER = "/tmp/clade-wheels"
BUILDER_LABEL = f"{LABEL_PREFIX}.builder"
_BUILD_LABELS = {OWNER_LABEL: "clade-images", ROLE_LABEL: BUILD_ROLE, BACKEND_LABEL: "docker"}
# The log file of the build in progress in this thread (see `build_log`): every build step's
# command and full output go there, so a failed build's log outlives its container.
_LOG: ContextVar[Path | None] = ContextVar("clade_build_log", default=None)


@dataclass(frozen=True)
class ImageConfig:
    """The runtime configuration written into a committed image."""

    env: dict[str, str]
    user: str
    workdir: str
    labels: dict[str, str] = field(default_factory=dict)

    def changes(self) -> list[str]:
        lines = [f"ENV {key}={value}" for key, value in sorted(self.env.items())]
        lines += [f"USER {self.user}", f"WORKDIR {self.workdir}", 'CMD ["sleep", "infinity"]']
        # Build-container labels would otherwise be inherited by the image.
        labels = {**_BUILD_LABELS, ROLE_LABEL: IMAGE_ROLE, **self.labels}
        lines += [f'LABEL {key}="{value}"' for key, value in sorted(labels.items())]
        lines.append(f'LABEL {BUILDER_LABEL}=""')
        return lines


def commit_python_layer(
    client: Any,
    *,
    from_image: str,
    wheels: Path,
    requirements: list[str],
    create_venv: bool,
    config: ImageConfig,
    tag: str,
    progress: Progress,
) -> str:
    """Install `requirements` from `wheels` into the venv of `from_image`; commit as `tag`.

    The venv (when `create_venv`) is made with the image's `python3`.
    """
    with _build_container(client, from_image) as container:
        _put_dir(container, wheels, _WHEELS_IN_CONTAINER)
        container.start()
        if create_venv:
            progress(f"creating {VENV}")
            _run(container, ["python3", "-m", "venv", VENV])
        progress(f"installing {len(requirements)} requirement(s) offline")
        options = [
            "install", "--no-index", "--no-cache-dir", "--disable-pip-version-check",
            "--find-links", _WHEELS_IN_CONTAINER,
        ]  # fmt: skip
        _run(container, [f"{VENV}/bin/pip", *options, *requirements])
        _run(container, ["rm", "-rf", _WHEELS_IN_CONTAINER])
        frozen = _run(container, [f"{VENV}/bin/pip", "freeze", "--disable-pip-version-check"])
        progress("installed: " + " ".join(frozen.split()))
        return _commit(container, tag, config, progress)


def remove_stale_builds(client: Any) -> list[str]:
    """Remove the build containers that an interrupted build of this host left behind: those
    whose builder process is gone. Builds of live processes, and of other hosts sharing the
    engine, are left alone."""
    # Another build on this engine may remove its container between the listing and the
    # inspect the SDK makes of each entry; one gone by then needs no removing.
    found = client.containers.list(
        all=True, filters={"label": f"{ROLE_LABEL}={BUILD_ROLE}"}, ignore_removed=True
    )
    removed = []
    for container in found:
        builder = (container.labels or {}).get(BUILDER_LABEL, "")
        if is_stale_builder(builder):
            remove_build_container(container)
            removed.append(str(container.id))
    return removed


def builder_identity(pid: int | None = None) -> str:
    """`host:pid:start time` of a process (this one by default), as build containers are labelled."""
    pid = os.getpid() if pid is None else pid
    return f"{_host()}:{pid}:{_start_time(pid)}"


def is_stale_builder(builder: str) -> bool:
    """Whether `builder` names a process of this host that no longer runs (a reused pid has
    another start time). Unlabelled or foreign containers are never stale here."""
    host, _, rest = builder.partition(":")
    pid, _, started = rest.partition(":")
    if host != _host() or not pid.isdigit() or not started:
        return False
    return _start_time(int(pid)) != started


def _host() -> str:
    # The host name, and the pid namespace: two containers that share a host name (host
    # networking) each have their own pids, so one must never judge the other's.
    try:
        namespace = os.readlink("/proc/self/ns/pid").partition("[")[2].rstrip("]")
    except OSError:
        namespace = "unknown"
    return f"{socket.gethostname()}/{namespace}"


def _start_time(pid: int) -> str:
    # Field 22 of /proc/<pid>/stat: ticks since boot; with the pid it names one process.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "gone"
    return stat.rpartition(")")[2].split()[19]


@contextmanager
def build_log(path: Path) -> Iterator[Path]:
    """Write every build step of this block (command and full output) to `path`. The file is
    kept when the block fails, and a failed step's error names it; removed when it succeeds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    token = _LOG.set(path)
    try:
        yield path
    finally:
        _LOG.reset(token)
    path.unlink(missing_ok=True)  # reached only when the block succeeded


@contextmanager
def _build_container(
    client: Any, image: str, *, volumes: dict[str, dict[str, str]] | None = None
) -> Iterator[Any]:
    try:
        container = client.containers.create(
            image,
            command=["sleep", "infinity"],
            user="0:0",
            init=True,
            network_mode="none",
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            labels={**_BUILD_LABELS, BUILDER_LABEL: builder_identity()},
            working_dir="/",
            volumes=volumes or {},
        )
    except DockerException as exc:
        raise SandboxError(f"cannot create a build container from {image}: {exc}") from exc
    try:
        yield container
    except BaseException as failure:
        try:
            remove_build_container(container)
        except SandboxError as exc:
            # The build's own error is the one to report; the leftover container is a note.
            failure.add_note(str(exc))
        raise
    remove_build_container(container)


def remove_build_container(container: Any) -> None:
    """Remove a build container; one already gone or already being removed counts as removed."""
    try:
        container.remove(force=True)
    except NotFound:
        return
    except APIError as exc:
        if exc.status_code == 409:  # "removal of container ... is already in progress"
            return
        raise SandboxError(f"cannot remove build container {container.id}: {exc}") from exc
    except DockerException as exc:
        raise SandboxError(f"cannot remove build container {container.id}: {exc}") from exc


def _put_dir(container: Any, source: Path, target: str) -> None:
    with tempfile.TemporaryFile() as buffer:
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            archive.add(source, arcname=Path(target).name)
        buffer.seek(0)
        if not container.put_archive(str(Path(target).parent), buffer):
            raise SandboxError(f"could not copy {source} into the build container")


def _run(container: Any, command: list[str]) -> str:
    result = container.exec_run(command, user="0:0")
    output = bytes(result.output or b"").decode(errors="replace")
    log = _LOG.get()
    if log is not None:
        with log.open("a") as handle:
            handle.write(f"$ {' '.join(command)}\n{output}\n[exit {result.exit_code}]\n")
    if result.exit_code != 0:
        where = f"\nfull log: {log}" if log is not None else ""
        raise SandboxError(
            f"image build step {' '.join(command[:3])} failed ({result.exit_code}):\n{output[-3000:]}{where}"
        )
    return output


def commit_files_layer(
    client: Any,
    *,
    from_image: str,
    trees: list[tuple[Path, str]],
    commands: list[list[str]],
    config: ImageConfig,
    tag: str,
    progress: Progress,
) -> str:
    """Copy each (host folder, folder in the image) of `trees` into `from_image`, run
    `commands` as root (network none), and commit as `tag`."""
    with _build_container(client, from_image) as container:
        for source, target in trees:
            progress(f"copying {source} to {target}")
            _put_dir(container, source, target)
        container.start()
        for command in commands:
            _run(container, command)
        return _commit(container, tag, config, progress)


# For the other image builders of this package (the agent runtime).
build_container = _build_container
run_in = _run


def _commit(container: Any, tag: str, config: ImageConfig, progress: Progress) -> str:
    """Stop the build container and commit it as `tag` with `config`."""
    container.kill()
    repository, _, version = tag.rpartition(":")
    try:
        container.commit(repository=repository, tag=version, changes=config.changes())
    except DockerException as exc:
        raise SandboxError(f"committing {tag} failed: {exc}") from exc
    progress(f"committed {tag}")
    return tag
