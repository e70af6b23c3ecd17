"""What `clade doctor` asks of the Docker engine: its version, and whether the base image and
the agent runtime a worker needs are there (never built here)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import docker
from docker.errors import DockerException

from sandbox.base import SandboxUnavailable
from sandbox.images.build import BASE_REPOSITORY, BaseImageRecipe, default_cache_dir
from sandbox.images.runtime import COMPLETE, runtime_key


@dataclass(frozen=True)
class ImagesState:
    base_tag: str
    base_present: bool
    runtime: Path | None  # where the runtime of the base image belongs; None without the image
    runtime_present: bool


@dataclass(frozen=True)
class EngineState:
    version: str
    api_version: str
    images: ImagesState


def engine_state(cache_dir: Path | None, *, timeout_s: float) -> EngineState:
    """The engine of this environment (DOCKER_HOST) and Clade's images on it;
    `SandboxUnavailable` when it does not answer."""
    try:
        client = docker.from_env(timeout=int(timeout_s))
        version = client.version()
    except (DockerException, OSError) as exc:
        raise SandboxUnavailable(str(exc)) from exc
    try:
        return EngineState(
            version=str(version.get("Version")),
            api_version=str(version.get("ApiVersion")),
            images=_images(client, cache_dir),
        )
    finally:
        client.close()


def _images(client: docker.DockerClient, cache_dir: Path | None) -> ImagesState:
    tag = f"{BASE_REPOSITORY}:{BaseImageRecipe().key()[:12]}"
    try:
        image = client.images.get(tag)
    except DockerException:
        return ImagesState(tag, base_present=False, runtime=None, runtime_present=False)
    cache = (cache_dir or default_cache_dir()).expanduser()
    runtime = cache / "runtime" / runtime_key(str(image.id))
    present = (runtime / COMPLETE).is_file()
    return ImagesState(tag, base_present=True, runtime=runtime, runtime_present=present)
