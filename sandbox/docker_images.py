"""The Docker backend's images (`ImageStore`): Clade's own built locally by `sandbox.images`,
a task's own pulled by name, folders copied out of an image through the engine's archive API.

The engine is connected on first use, so a backend (and a worker) can be made before it is
needed; every engine failure becomes a `SandboxError`.
"""

from __future__ import annotations

import tarfile
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from docker.errors import DockerException, ImageNotFound

from sandbox.base import BACKEND_LABEL, OWNER_LABEL, ROLE_LABEL, Progress, SandboxError, SandboxFileError
from sandbox.images.build import (
    cached_build,
    default_cache_dir,
    ensure_agent_image,
    ensure_base_image,
    ensure_runtime,
    ensure_task_image,
    image_exists,
)
from sandbox.images.dockerfile import build_dockerfile
from sandbox.images.layers import commit_files_layer
from sandbox.images.recipes import LayeredImage

# The short-lived containers `copy_out` creates (never started) carry these labels, so that
# one left by a killed process is found and removed like any other orphan.
COPY_ROLE = "image-copy"
_COPY_LABELS = {OWNER_LABEL: "clade-images", ROLE_LABEL: COPY_ROLE, BACKEND_LABEL: "docker"}


def _quiet(_line: str) -> None:
    return None


class DockerImages:
    """Images on one Docker engine; `client` (a docker client) or `connect` (made on first use)."""

    def __init__(
        self,
        client: Any | None = None,
        *,
        cache_dir: Path | None = None,
        connect: Callable[[], Any] | None = None,
    ) -> None:
        self._client = client
        self._connect = connect
        self.cache_dir = (cache_dir or default_cache_dir()).expanduser()
        self._base: str | None = None
        self._lock = threading.Lock()  # one build of each image at a time in this process

    @property
    def client(self) -> Any:
        if self._client is None:
            if self._connect is None:
                from sandbox.docker_backend import connect

                self._connect = connect
            self._client = self._connect()
        return self._client

    def exists(self, image: str) -> bool:
        return image_exists(self.client, image)

    def base(self, *, progress: Progress | None = None) -> str:
        with self._lock:
            if self._base is None:
                self._base = ensure_base_image(self.client, self.cache_dir, progress=progress or _quiet)
            return self._base

    def for_agent(self, requirements: Sequence[str], *, progress: Progress | None = None) -> str:
        base = self.base(progress=progress)
        with self._lock:
            return ensure_agent_image(
                self.client, base, list(requirements), self.cache_dir, progress=progress or _quiet
            )

    def for_task(self, image: str, *, progress: Progress | None = None) -> str:
        with self._lock:
            return ensure_task_image(self.client, image, progress=progress or _quiet)

    def runtime(self, image: str, *, progress: Progress | None = None) -> Path:
        with self._lock:
            return ensure_runtime(self.client, image, self.cache_dir, progress=progress or _quiet)

    def build(self, recipe: LayeredImage, *, progress: Progress | None = None) -> str:
        said = progress or _quiet
        client = self.client
        if image_exists(client, recipe.tag):
            return recipe.tag
        base_tag = ensure_base_image(client, self.cache_dir, progress=said, recipe=recipe.base)

        def build() -> str:
            with tempfile.TemporaryDirectory(prefix="clade-image-") as scratch:
                return commit_files_layer(
                    client,
                    from_image=base_tag,
                    trees=recipe.files(Path(scratch), self.cache_dir, said),
                    commands=[list(command) for command in recipe.commands],
                    config=recipe.config,
                    tag=recipe.tag,
                    progress=said,
                )

        return cached_build(client, self.cache_dir, recipe.tag, build)

    def from_dockerfile(
        self, context: Path, tag: str, *, timeout_s: float, progress: Progress | None = None
    ) -> str:
        client = self.client
        said = progress or _quiet
        return cached_build(
            client,
            self.cache_dir,
            tag,
            lambda: build_dockerfile(client, context, tag, timeout_s=timeout_s, progress=said),
        )

    def copy_out(self, image: str, source: str, dest: Path) -> Path:
        client = self.client
        try:
            try:
                container = client.containers.create(
                    image, command=["true"], network_mode="none", labels=_COPY_LABELS
                )
            except ImageNotFound:
                # Absent here: pulled by name (PullFailed, naming the image, when it cannot be).
                ensure_task_image(client, image)
                container = client.containers.create(
                    image, command=["true"], network_mode="none", labels=_COPY_LABELS
                )
        except (DockerException, OSError) as exc:
            raise SandboxError(f"cannot create a container from {image}: {exc}") from exc
        try:
            with tempfile.TemporaryFile() as buffer:
                try:
                    chunks, _stat = container.get_archive(source)
                    for chunk in chunks:
                        buffer.write(chunk)
                except DockerException as exc:
                    raise SandboxFileError(f"{image} has no {source}: {exc}") from exc
                buffer.seek(0)
                dest.mkdir(parents=True, exist_ok=True)
                with tarfile.open(fileobj=buffer, mode="r|") as archive:
                    # "tar", not "data": repositories hold symlinks that point outside them; it
                    # still refuses members that would land outside `dest`, even through a link.
                    archive.extractall(dest, filter="tar")
        finally:
            container.remove(force=True)
        return dest / Path(source).name
