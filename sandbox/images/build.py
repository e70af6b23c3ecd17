"""Locally built sandbox images, tagged by a hash of their inputs and reused when present.

    clade/os:<hash>     debootstrapped Debian (`rootfs.py`), imported from a cached tarball
    clade/base:<hash>   + a venv with the base requirements, first on PATH
    clade/agent:<hash>  + an agent's extra requirements (keyed by base tag and requirements)
    <cache>/runtime/    the agent runtime (`runtime.py`): Clade's Python and venv out of the
                        base or agent image, self-contained, mounted read-only at /clade/runtime
                        in any task image (SWE-bench: the instance image, used as it is)

Clade's own images are never pulled and no build container has a network; a task image
that the engine lacks is pulled by name (`pull.py`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from docker.errors import DockerException, ImageNotFound

from sandbox.base import LABEL_PREFIX, SandboxError, SandboxUnavailable
from sandbox.images.layers import VENV, ImageConfig, build_log, commit_python_layer, remove_stale_builds
from sandbox.images.locking import build_lock
from sandbox.images.pull import pull_image
from sandbox.images.rootfs import SANDBOX_HOME, SANDBOX_UID, RootfsRecipe, ensure_rootfs_tar
from sandbox.images.runtime import COMPLETE, build_runtime, runtime_key
from sandbox.images.wheels import WheelTarget, ensure_wheels, normalise

Progress = Callable[[str], None]

BASE_REQUIREMENTS = ("openai", "httpx", "pytest")
OS_REPOSITORY = "clade/os"
BASE_REPOSITORY = "clade/base"
AGENT_REPOSITORY = "clade/agent"
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


def ensure_runtime(
    client: Any,
    source_image: str,
    cache_dir: Path | None = None,
    *,
    progress: Progress = _quiet,
) -> Path:
    """Host folder of the agent runtime made from `source_image` (the base image, or an agent
    image with the agent's requirements): Clade's Python and venv, self-contained, to be
    mounted read-only at `RUNTIME_DIR` in any task image (`runtime.py`).

    Cached as <cache>/runtime/<layout version>-<image id>; built once, under the build locks.
    """
    cache = (cache_dir or default_cache_dir()).expanduser()
    image = _inspect(client, source_image)
    dest = cache / "runtime" / runtime_key(str(image["Id"]))
    if (dest / COMPLETE).is_file():
        return dest
    with build_lock(client, cache):
        if (dest / COMPLETE).is_file():
            return dest
        remove_stale_builds(client)
        with build_log(cache / "logs" / f"runtime-{dest.name}.log"):
            return build_runtime(client, source_image, dest, progress=progress)


def ensure_task_image(client: Any, task_image: str, *, progress: Progress = _quiet) -> str:
    """`task_image` as it is, pulled (with progress) when this engine does not have it.

    Nothing is layered onto it: the agent brings Clade's runtime in a read-only mount, so
    the image's own python (or lack of one) and PATH are what the task's commands see.
    Raises `SandboxUnavailable` naming the image when it is absent and cannot be pulled.
    """
    if not _exists(client, task_image):
        pull_image(client, task_image, progress=progress)
    return task_image


def _cached_build(client: Any, cache: Path, tag: str, build: Callable[[], str]) -> str:
    """`tag` if the engine has it; else build it once, under the engine's and the cache's
    locks (another process may have built it while this one waited), clearing containers of
    this host's interrupted builds first. A failed build's log stays in the cache's logs/."""
    if _exists(client, tag):
        return tag
    with build_lock(client, cache):
        if _exists(client, tag):
            return tag
        remove_stale_builds(client)
        with build_log(cache / "logs" / f"{tag.replace('/', '-').replace(':', '-')}.log"):
            return build()


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


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def image_exists(client: Any, tag: str) -> bool:
    """Whether the engine has `tag` (never pulled)."""
    return _exists(client, tag)


def cached_build(client: Any, cache_dir: Path, tag: str, build: Callable[[], str]) -> str:
    """`tag`, built by `build` once under the cache's lock unless the engine has it."""
    return _cached_build(client, cache_dir, tag, build)
