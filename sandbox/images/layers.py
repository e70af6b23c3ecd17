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
    venv_python: str = "python3",
    bootstrap_pip: bool = False,
) -> str:
    """Install `requirements` from `wheels` into the venv of `from_image`; commit as `tag`.

    `venv_python` creates the venv (when `create_venv`). With `bootstrap_pip` the venv is
    made without pip (images whose python lacks ensurepip, as Debian's and Ubuntu's do
    without python3-venv) and pip runs from its own wheel, which `wheels` must hold.
    """
    with _build_container(client, from_image) as container:
        _put_dir(container, wheels, _WHEELS_IN_CONTAINER)
        container.start()
        if create_venv:
            progress(f"creating {VENV} with {venv_python}")
            _run(container, [venv_python, "-m", "venv", *(["--without-pip"] if bootstrap_pip else []), VENV])
        progress(f"installing {len(requirements)} requirement(s) offline")
        options = [
            "install", "--no-index", "--no-cache-dir", "--disable-pip-version-check",
            "--find-links", _WHEELS_IN_CONTAINER,
        ]  # fmt: skip
        if bootstrap_pip:
            pip = f'{VENV}/bin/python "$(ls {_WHEELS_IN_CONTAINER}/pip-*.whl | head -n 1)/pip"'
            _run(container, ["sh", "-c", f'{pip} {" ".join(options)} "$@"', "sh", *requirements])
        else:
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


@dataclass(frozen=True)
class PythonProbe:
    """What an image holds for Clade's Python layer."""

    has_venv: bool  # Clade's venv is already at VENV
    python: str  # the interpreter to build on: the venv's, or the image's own python3
    version: str  # "3.11"
    glibc_minor: int | None  # None: not a glibc the interpreter reports

    def describe(self) -> str:
        where = f"Clade's venv at {VENV}" if self.has_venv else f"no venv; python {self.python}"
        return f"{where} (Python {self.version}, glibc 2.{self.glibc_minor})"


_PROBE = f"""
if [ -x {VENV}/bin/python ]; then echo venv; set -- {VENV}/bin/python
else echo none; set -- /usr/bin/python3 /usr/local/bin/python3 "$(command -v python3 || true)"; fi
for p in "$@"; do
  if [ -n "$p" ] && [ -x "$p" ]; then
    echo "$p"
    exec "$p" -c 'import platform, sys; print("%d.%d" % sys.version_info[:2]); print(platform.libc_ver()[1])'
  fi
done
echo "clade: no python3 in this image" >&2; exit 3
"""


def probe_python(client: Any, image: str) -> PythonProbe:
    """Whether `image` already holds Clade's venv, and which python3 it has (a build
    container: network none, started only to ask)."""
    with _build_container(client, image) as container:
        container.start()
        lines = _run(container, ["sh", "-c", _PROBE]).split()
    if len(lines) < 3:
        raise SandboxError(f"cannot tell which python {image} has: {' '.join(lines)}")
    glibc = lines[3].split(".") if len(lines) > 3 else []
    minor = int(glibc[1]) if len(glibc) > 1 and glibc[0] == "2" and glibc[1].isdigit() else None
    return PythonProbe(has_venv=lines[0] == "venv", python=lines[1], version=lines[2], glibc_minor=minor)


def remove_stale_builds(client: Any) -> list[str]:
    """Remove build containers an interrupted build left behind."""
    stale = client.containers.list(all=True, filters={"label": f"{ROLE_LABEL}={BUILD_ROLE}"})
    for container in stale:
        container.remove(force=True)
    return [str(container.id) for container in stale]


@contextmanager
def _build_container(client: Any, image: str) -> Iterator[Any]:
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
        container.kill()
        repository, _, version = tag.rpartition(":")
        try:
            container.commit(repository=repository, tag=version, changes=config.changes())
        except DockerException as exc:
            raise SandboxError(f"committing {tag} failed: {exc}") from exc
    progress(f"committed {tag}")
    return tag
