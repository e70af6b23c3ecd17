"""Locks around image builds: one per Docker engine, one per cache folder.

The engine lock lives in a folder that every cache on this host shares (keyed by the engine's
ID), so two builds with different cache folders against one engine still take turns; the
cache lock guards the cache's own work folders (wheels, the OS layer) when two engines share
one cache. Always taken in that order, engine first, so two builders never deadlock.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from docker.errors import DockerException

from sandbox.base import SandboxUnavailable

SHARED_LOCK_DIR = Path(tempfile.gettempdir()) / "clade-image-locks"


def engine_id(client: Any) -> str:
    """A stable name for the engine `client` talks to: its ID, else its address."""
    try:
        info: dict[str, Any] = client.info()
    except (DockerException, OSError) as exc:
        raise SandboxUnavailable(f"Docker engine unreachable: {exc}") from exc
    identity = str(info.get("ID") or "") or str(getattr(client.api, "base_url", "unknown"))
    return hashlib.sha256(identity.encode()).hexdigest()[:16]


@contextmanager
def build_lock(client: Any, cache: Path, lock_dir: Path | None = None) -> Iterator[None]:
    """Hold the engine's build lock, then the cache's, for one build."""
    folder = lock_dir or SHARED_LOCK_DIR
    _shared_folder(folder)
    cache.mkdir(parents=True, exist_ok=True)
    with file_lock(folder / f"engine-{engine_id(client)}.lock"), file_lock(cache / ".build.lock"):
        yield


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive `flock` on `path`. Opened read-only: flock needs only a descriptor, so
    builders running as other users can lock a file another user created."""
    fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _shared_folder(folder: Path) -> None:
    if folder.is_dir():
        return
    folder.mkdir(parents=True, exist_ok=True)
    # Sticky and world-writable like /tmp: builders running as other users lock here too.
    # PermissionError: made by another user meanwhile, so theirs is already shared.
    with contextlib.suppress(PermissionError):
        folder.chmod(0o1777)
