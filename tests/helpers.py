"""Small agents and tarballs that many tests build."""

from __future__ import annotations

import errno
import io
import os
import subprocess
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.servers import ServiceClients

AGENT_TOML = 'name = "tiny"\nsolve = "python -m tiny"\n'


def write_agent(root: Path, files: dict[str, str] | None = None) -> Path:
    """A minimal valid agent folder."""
    root.mkdir(parents=True, exist_ok=True)
    content = {"agent.toml": AGENT_TOML, "tiny/__init__.py": "", "tiny/__main__.py": "print('hi')\n"}
    for name, text in (content | (files or {})).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def tar_of(root: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(root, arcname=".")
    return buffer.getvalue()


def tar_names(data: bytes) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return tar.getnames()


def import_seed(service: ServiceClients, workdir: Path) -> str:
    """Import the tiny agent, with a 50-line tiny/core.py, as a seed; its agent id."""
    root = write_agent(workdir / "seed-src", {"tiny/core.py": "".join(f"line {i}\n" for i in range(50))})
    with service.admin as client:
        response = client.post("/api/seeds", files={"file": ("a.tgz", tar_of(root))}, data={"name": "tiny"})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


# An image registry nobody listens on (loopback, port 9): a pull from it fails at once, offline.
CLOSED_REGISTRY = "127.0.0.1:9"


@contextmanager
def small_tmpfs(mount: Path, size_mb: int) -> Iterator[Path]:
    """A tmpfs of its own at `mount`: a disk that really fills up. Needs root, as CI has; without it
    the test fails (a skipped disk-full test would pass for nothing)."""
    mount.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m,mode=0755", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        raise RuntimeError(f"cannot mount a tmpfs at {mount} (root needed): {mounted.stderr.strip()}")
    try:
        yield mount
    finally:
        # Lazily if something still holds a file there: the mount goes once it is let go.
        if subprocess.run(["umount", str(mount)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "--lazy", str(mount)], check=True)


def fill_disk(ballast: Path) -> None:
    """Write zeros to `ballast` until the disk holding it has not one byte left."""
    fd = os.open(ballast, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for chunk in (1 << 20, 1 << 16, 1 << 12, 1):
            block = bytes(chunk)
            while True:
                try:
                    os.write(fd, block)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
    finally:
        os.close(fd)
