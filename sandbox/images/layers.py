"""Commit a Python layer onto an image, offline: wheels go in by archive, pip never sees a network.

Every build container runs with `network_mode="none"` and no capabilities; it is
labelled so that an interrupted build can be found and removed.
"""

from __future__ import annotations

import tarfile
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docker.errors import DockerException

from sandbox.base import BACKEND_LABEL, OWNER_LABEL, ROLE_LABEL, SandboxError

Progress = Callable[[str], None]

VENV = "/opt/clade-venv"
BUILD_ROLE = "image-build"
IMAGE_ROLE = "image"
_WHEELS_IN_CONTAINER = "/tmp/clade-wheels"
_BUILD_LABELS = {OWNER_LABEL: "clade-images", ROLE_LABEL: BUILD_ROLE, BACKEND_LABEL: "docker"}


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
        container.kill()
        repository, _, version = tag.rpartition(":")
        try:
            container.commit(repository=repository, tag=version, changes=config.changes())
        except DockerException as exc:
            raise SandboxError(f"committing {tag} failed: {exc}") from exc
    progress(f"committed {tag}")
    return tag


def remove_stale_builds(client: Any) -> list[str]:
    """Remove build containers an interrupted build left behind."""
    stale = client.containers.list(all=True, filters={"label": f"{ROLE_LABEL}={BUILD_ROLE}"})
    for container in stale:
        container.remove(force=True)
    return [str(container.id) for container in stale]


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
            labels=_BUILD_LABELS,
            working_dir="/",
            volumes=volumes or {},
        )
    except DockerException as exc:
        raise SandboxError(f"cannot create a build container from {image}: {exc}") from exc
    try:
        yield container
    finally:
        container.remove(force=True)


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
    if result.exit_code != 0:
        raise SandboxError(
            f"image build step {' '.join(command[:3])} failed ({result.exit_code}):\n{output[-3000:]}"
        )
    return output


# For the other image builders of this package (the agent runtime).
build_container = _build_container
run_in = _run
