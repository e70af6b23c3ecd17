"""Locally built sandbox images, tagged by a hash of their inputs and reused when present.

    clade/os:<hash>     debootstrapped Debian (`rootfs.py`), imported from a cached tarball
    clade/base:<hash>   + a venv with the base requirements, first on PATH
    clade/agent:<hash>  + an agent's extra requirements (keyed by base tag and requirements)
    clade/task:<hash>   a task's own image (SWE-bench: the instance image) + Clade's venv with
                        the base and the agent's requirements (keyed by image id and requirements);
                        the image's PATH is kept: the venv is not first on it

Nothing is pulled from a registry and no build container has a network.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from docker.errors import DockerException, ImageNotFound

from sandbox.base import LABEL_PREFIX, SandboxError, SandboxUnavailable
from sandbox.images.layers import (
    VENV,
    ImageConfig,
    PythonProbe,
    commit_python_layer,
    probe_python,
    remove_stale_builds,
)
from sandbox.images.rootfs import SANDBOX_HOME, SANDBOX_UID, RootfsRecipe, ensure_rootfs_tar
from sandbox.images.wheels import WheelTarget, ensure_wheels, normalise

Progress = Callable[[str], None]

BASE_REQUIREMENTS = ("openai", "httpx", "pytest")
OS_REPOSITORY = "clade/os"
BASE_REPOSITORY = "clade/base"
AGENT_REPOSITORY = "clade/agent"
TASK_REPOSITORY = "clade/task"
VENV_LABEL = f"{LABEL_PREFIX}.venv"
_IMAGE_LABEL = f"{LABEL_PREFIX}.image"
_SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def default_cache_dir() -> Path:
    return Path.home() / ".cache" / "clade" / "images"


def _quiet(_line: str) -> None:
    return None


@dataclass(frozen=True)
class BaseImageRecipe:
    """All inputs of the base image; its tag is a hash of this."""

    rootfs: RootfsRecipe = field(default_factory=RootfsRecipe)
    requirements: tuple[str, ...] = BASE_REQUIREMENTS
    wheels: WheelTarget = field(default_factory=WheelTarget)

    def key(self) -> str:
        return _digest(asdict(self))

    def config(self) -> ImageConfig:
        return ImageConfig(
            # The venv first, so `python` and `python3` both find the base requirements.
            env={"PATH": f"{VENV}/bin:{_SYSTEM_PATH}", "HOME": SANDBOX_HOME, "LANG": "C.UTF-8"},
            user=f"{SANDBOX_UID}:{SANDBOX_UID}",
            workdir="/clade",
            labels={_IMAGE_LABEL: "base", f"{LABEL_PREFIX}.inputs": self.key(), VENV_LABEL: VENV},
        )


def ensure_base_image(
    client: Any,
    cache_dir: Path | None = None,
    *,
    progress: Progress = _quiet,
    recipe: BaseImageRecipe | None = None,
    mirror: str | None = None,
) -> str:
    """Tag of the base image, built (OS layer, then Python layer) on first use.

    `mirror` overrides the Debian mirror read from the host's apt configuration.
    """
    recipe = recipe or BaseImageRecipe()
    cache = (cache_dir or default_cache_dir()).expanduser()
    tag = f"{BASE_REPOSITORY}:{recipe.key()[:12]}"

    def build() -> str:
        os_tag = _ensure_os_image(client, cache, recipe, progress=progress, mirror=mirror)
        requirements = normalise(recipe.requirements)
        wheels = ensure_wheels(requirements, cache, target=recipe.wheels, progress=progress)
        return commit_python_layer(
            client,
            from_image=os_tag,
            wheels=wheels,
            requirements=requirements,
            create_venv=True,
            config=recipe.config(),
            tag=tag,
            progress=progress,
        )

    return _cached_build(client, cache, tag, build)


def ensure_agent_image(
    client: Any,
    base_tag: str,
    requirements: list[str],
    cache_dir: Path | None = None,
    *,
    progress: Progress = _quiet,
    target: WheelTarget | None = None,
) -> str:
    """Tag of `base_tag` plus `requirements` as a cached layer; the base tag when there are none.

    Raises `InvalidRequirement` for anything but plain `name[extras] <specifiers>` lines.
    """
    wanted = normalise(requirements)
    if not wanted:
        return base_tag
    wheel_target = target or WheelTarget()
    cache = (cache_dir or default_cache_dir()).expanduser()
    base = _inspect(client, base_tag)
    tag = f"{AGENT_REPOSITORY}:{_digest([base['Id'], wanted, asdict(wheel_target)])[:12]}"

    def build() -> str:
        wheels = ensure_wheels(wanted, cache, target=wheel_target, progress=progress)
        base_config = base.get("Config") or {}
        config = ImageConfig(
            env=dict(item.split("=", 1) for item in base_config.get("Env") or []),
            user=base_config.get("User") or f"{SANDBOX_UID}:{SANDBOX_UID}",
            workdir=base_config.get("WorkingDir") or "/clade",
            labels={_IMAGE_LABEL: "agent", f"{LABEL_PREFIX}.base": base_tag},
        )
        return commit_python_layer(
            client,
            from_image=base_tag,
            wheels=wheels,
            requirements=wanted,
            create_venv=False,
            config=config,
            tag=tag,
            progress=progress,
        )

    return _cached_build(client, cache, tag, build)


def ensure_task_image(
    client: Any,
    task_image: str,
    requirements: list[str],
    cache_dir: Path | None = None,
    *,
    progress: Progress = _quiet,
) -> str:
    """Tag of `task_image` plus Clade's Python layer: a venv at VENV with the base requirements
    and `requirements`, from wheels downloaded on the host (build containers: network none).

    Cached as clade/task:<hash of the image id and the requirements>. An image that already
    holds Clade's venv (built from the base image) only gets `requirements` layered into it,
    as `ensure_agent_image` does; with none it is tagged as is. Otherwise the venv is made
    from the image's own python3 (`/usr/bin/python3` first), with wheels for that Python
    and glibc. The image's environment (PATH above all) is kept as it is: the venv does not
    shadow the repository's python; the runner puts it first for the agent's command only.

    Raises `InvalidRequirement` for anything but plain `name[extras] <specifiers>` lines,
    `SandboxUnavailable` when the image is not on this engine (it is never pulled).
    """
    extra = normalise(requirements)
    cache = (cache_dir or default_cache_dir()).expanduser()
    image = _inspect(client, task_image)
    tag = f"{TASK_REPOSITORY}:{_digest([image['Id'], list(BASE_REQUIREMENTS), extra])[:12]}"

    def build() -> str:
        probe = _probe(client, task_image, image)
        progress(f"{task_image}: {probe.describe()}")
        repository, _, version = tag.rpartition(":")
        if probe.has_venv and not extra:
            client.images.get(task_image).tag(repository, version)
            return tag
        image_config = image.get("Config") or {}
        config = ImageConfig(
            env={},  # the build container's environment is the image's, and the commit keeps it
            user=image_config.get("User") or "0:0",
            workdir=image_config.get("WorkingDir") or "/",
            labels={_IMAGE_LABEL: "task", f"{LABEL_PREFIX}.task-image": task_image, VENV_LABEL: VENV},
        )
        target = WheelTarget(
            python_version=probe.version,
            glibc_minor=probe.glibc_minor if probe.glibc_minor is not None else 17,
        )
        wanted = extra if probe.has_venv else normalise([*BASE_REQUIREMENTS, "pip", *extra])
        wheels = ensure_wheels(wanted, cache, target=target, progress=progress)
        return commit_python_layer(
            client,
            from_image=task_image,
            wheels=wheels,
            requirements=wanted,
            create_venv=not probe.has_venv,
            config=config,
            tag=tag,
            progress=progress,
            venv_python=probe.python,
            bootstrap_pip=not probe.has_venv,
        )

    return _cached_build(client, cache, tag, build)


def _cached_build(client: Any, cache: Path, tag: str, build: Callable[[], str]) -> str:
    """`tag` if the engine has it; else build it once, under the cache's lock (another process
    may have built it while this one waited), clearing containers of interrupted builds first."""
    if _exists(client, tag):
        return tag
    with _build_lock(cache):
        if _exists(client, tag):
            return tag
        remove_stale_builds(client)
        return build()


def _probe(client: Any, task_image: str, image: dict[str, Any]) -> PythonProbe:
    labels = (image.get("Config") or {}).get("Labels") or {}
    if labels.get(VENV_LABEL) == VENV and labels.get(_IMAGE_LABEL) in ("base", "agent"):
        # Built by Clade: the base image's Python (what `ensure_agent_image` assumes too).
        defaults = WheelTarget()
        return PythonProbe(True, f"{VENV}/bin/python", defaults.python_version, defaults.glibc_minor)
    return probe_python(client, task_image)


def _ensure_os_image(
    client: Any, cache: Path, recipe: BaseImageRecipe, *, progress: Progress, mirror: str | None
) -> str:
    tag = f"{OS_REPOSITORY}:{recipe.rootfs.key()[:12]}"
    if _exists(client, tag):
        return tag
    tarball = ensure_rootfs_tar(cache, recipe.rootfs, progress=progress, mirror=mirror)
    progress(f"importing {tarball.name} as {tag}")
    repository, _, version = tag.rpartition(":")
    try:
        answer = client.api.import_image(
            src=str(tarball),
            repository=repository,
            tag=version,
            changes=[f"ENV PATH={_SYSTEM_PATH}", f"ENV HOME={SANDBOX_HOME}", "ENV LANG=C.UTF-8"],
        )
    except DockerException as exc:
        raise SandboxError(f"importing the OS layer failed: {exc}") from exc
    if "error" in str(answer).lower() or not _exists(client, tag):
        raise SandboxError(f"importing the OS layer failed: {answer}")
    return tag


def _exists(client: Any, tag: str) -> bool:
    try:
        client.images.get(tag)
    except ImageNotFound:
        return False
    except (DockerException, OSError) as exc:
        raise SandboxUnavailable(f"Docker engine unreachable: {exc}") from exc
    return True


def _inspect(client: Any, tag: str) -> dict[str, Any]:
    try:
        attrs: dict[str, Any] = client.images.get(tag).attrs
    except ImageNotFound as exc:
        raise SandboxUnavailable(f"image {tag} not found; build it with `clade images build`") from exc
    except (DockerException, OSError) as exc:
        raise SandboxUnavailable(f"Docker engine unreachable: {exc}") from exc
    return attrs


@contextmanager
def _build_lock(cache: Path) -> Iterator[None]:
    # One build at a time per cache; a second worker waits and then finds the image.
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / ".build.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def image_exists(client: Any, tag: str) -> bool:
    """Whether the engine has `tag` (never pulled)."""
    return _exists(client, tag)


def cached_build(client: Any, cache_dir: Path, tag: str, build: Callable[[], str]) -> str:
    """`tag`, built by `build` once under the cache's lock unless the engine has it."""
    return _cached_build(client, cache_dir, tag, build)
