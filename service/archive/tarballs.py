"""Safe extraction of uploaded tar archives (seed imports)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from contracts.errors import InvalidAgentError


def extract_tar(data: bytes, dest: Path) -> None:
    """Extract files and folders only; links, devices and paths leaving `dest` are refused."""
    try:
        archive = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")  # noqa: SIM115
    except tarfile.TarError as exc:
        raise InvalidAgentError(f"upload is not a tar archive: {exc}") from exc
    with archive:
        members = archive.getmembers()
        for member in members:
            if not (member.isfile() or member.isdir()):
                raise InvalidAgentError(f"upload: {member.name}: only files and folders are allowed")
        try:
            archive.extractall(dest, members=members, filter="data")
        except tarfile.FilterError as exc:
            raise InvalidAgentError(f"upload: {exc}") from exc
    strip_single_top_folder(dest)


def strip_single_top_folder(dest: Path) -> None:
    """`tar czf x.tgz myagent/` wraps everything in one folder; the agent's root is inside it."""
    entries = list(dest.iterdir())
    if len(entries) == 1 and entries[0].is_dir() and not (dest / "agent.toml").exists():
        inner = entries[0]
        for child in inner.iterdir():
            child.rename(dest / child.name)
        inner.rmdir()
