"""Pull a task's image (SWE-bench: an instance image) that the engine does not have yet.

Clade's own images are built locally; a task image is a third party's, named by the
benchmark (e.g. `swebench/sweb.eval.x86_64.<id>:latest`). An image already on the
engine, pulled or built or loaded under that name, is used as it is and never pulled.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from docker.errors import DockerException, ImageNotFound

from sandbox.base import SandboxUnavailable

Progress = Callable[[str], None]

_MB = 1024 * 1024


class PullFailed(SandboxUnavailable):
    """A task image is not on this engine and could not be pulled."""


def pull_image(client: Any, name: str, *, progress: Progress) -> None:
    """Pull `name` (repository[:tag], default tag `latest`), reporting per-image progress.

    Raises `PullFailed` naming the image and what to do when the pull fails: no registry
    reachable, no such image, or no permission.
    """
    repository, tag = split_name(name)
    progress(f"{name}: not on this engine; pulling")
    try:
        events = client.api.pull(repository, tag=tag, stream=True, decode=True)
        follow_pull(name, events, progress)
        client.images.get(name)
    except (DockerException, OSError, PullError) as exc:
        raise PullFailed(_advice(name, _reason(exc))) from exc
    progress(f"{name}: pulled")


def split_name(name: str) -> tuple[str, str]:
    """`repo/name:tag` -> (`repo/name`, `tag`); a registry's port is not a tag."""
    if "@" in name:
        repository, digest = name.split("@", 1)
        return repository, digest
    head, sep, tail = name.rpartition(":")
    if sep and "/" not in tail:
        return head, tail
    return name, "latest"


class PullError(RuntimeError):
    """An error event in the engine's pull stream."""


def follow_pull(name: str, events: Iterable[Mapping[str, Any]], progress: Progress) -> None:
    """Report a pull's download progress from the engine's event stream; raise on an error event."""
    # Layers report `current`/`total` bytes while downloading; report the sum every ~10%.
    sizes: dict[str, tuple[int, int]] = {}
    last_tenth = -1
    for event in events:
        if "error" in event:
            raise PullError(str(event.get("error")))
        detail = event.get("progressDetail") or {}
        layer = str(event.get("id") or "")
        if event.get("status") == "Downloading" and detail.get("total"):
            sizes[layer] = (int(detail.get("current") or 0), int(detail["total"]))
        elif event.get("status") in ("Download complete", "Pull complete") and layer in sizes:
            sizes[layer] = (sizes[layer][1], sizes[layer][1])
        if sizes:
            done = sum(current for current, _ in sizes.values())
            total = sum(total for _, total in sizes.values())
            tenth = 10 * done // max(total, 1)
            if tenth != last_tenth:
                last_tenth = tenth
                progress(f"{name}: {done / _MB:.0f}/{total / _MB:.0f} MB of {len(sizes)} layer(s)")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ImageNotFound):
        return "the pull finished but the engine does not list the image"
    text = str(getattr(exc, "explanation", None) or exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


def _advice(name: str, reason: str) -> str:
    return (
        f"image {name} is not on this Docker engine and could not be pulled ({reason}). "
        "Pull it where a registry is reachable and `docker load` it here, or build it under "
        "this name (for SWE-bench: the harness's image builder, or a `namespace` option matching "
        "the images you have)"
    )
