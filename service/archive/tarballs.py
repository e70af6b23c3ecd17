"""Safe extraction of uploaded tar archives (seed imports).

Members are read one header at a time and checked against the limits before anything of
them is written, so a small archive that expands to gigabytes is refused after its first
oversized header, having written at most the limit.
"""

from __future__ import annotations

import errno
import io
import lzma
import tarfile
import uuid
import zlib
from pathlib import Path
from typing import IO

from contracts.errors import InvalidAgentError
from service.archive.limits import AgentLimits, too_large

# The disk being full is the operator's problem, not a bad upload: it is not reported as one.
_DISK_ERRORS = {errno.ENOSPC, errno.EDQUOT}
# Long names and pax records take a few kilobytes; tarfile reads such a header whole into memory.
MAX_HEADER_BYTES = 1024 * 1024
_HEADER_TYPES = {tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE}
_HEADER_TYPES |= {tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK}


class _BoundedTarInfo(tarfile.TarInfo):
    """Refuses an extended header (pax, GNU long name) larger than any real one before tarfile
    reads it: otherwise a small compressed upload could make the service hold gigabytes."""

    def _proc_member(self, archive: tarfile.TarFile) -> tarfile.TarInfo:
        if self.type in _HEADER_TYPES and self.size > MAX_HEADER_BYTES:
            raise InvalidAgentError(
                f"upload: an extended tar header of {self.size} bytes (at most {MAX_HEADER_BYTES})"
            )
        member: tarfile.TarInfo = super()._proc_member(archive)  # type: ignore[misc]  # private, not typed
        return member


def extract_tar(source: bytes | IO[bytes], dest: Path, limits: AgentLimits) -> None:
    """Extract files and folders only; links, devices, sparse files and paths leaving `dest`
    are refused, and so is anything over `limits`."""
    fileobj = io.BytesIO(source) if isinstance(source, bytes) else source
    try:
        archive = tarfile.open(fileobj=fileobj, mode="r:*", tarinfo=_BoundedTarInfo)  # noqa: SIM115
    except (tarfile.TarError, EOFError, zlib.error, lzma.LZMAError) as exc:
        # A gzip stream cut inside its first block raises EOFError while tarfile reads the first header.
        raise InvalidAgentError(f"upload is not a tar archive: {exc or type(exc).__name__}") from exc
    try:
        with archive:
            _extract_members(archive, dest, limits)
    except (tarfile.TarError, EOFError, zlib.error, lzma.LZMAError) as exc:
        # A truncated or corrupt stream: gzip raises EOFError or zlib.error, tarfile its own.
        raise InvalidAgentError(f"upload is a damaged tar archive: {exc}") from exc
    except OSError as exc:
        if exc.errno in _DISK_ERRORS:
            raise
        # A name the file system refuses (ENAMETOOLONG, ...) or a corrupt gzip/bzip2 stream.
        reason = exc.strerror or str(exc)
        where = f" {Path(exc.filename).relative_to(dest)}" if _inside(exc.filename, dest) else ""
        raise InvalidAgentError(f"upload:{where} cannot be unpacked: {reason}") from exc
    strip_single_top_folder(dest)


def _extract_members(archive: tarfile.TarFile, dest: Path, limits: AgentLimits) -> None:
    total = 0
    # One header at a time: nothing ahead of the member being checked is read or written.
    for entries, member in enumerate(archive, start=1):
        if entries > limits.max_agent_files:
            what = f"upload has more than {limits.max_agent_files} entries (files and folders)"
            raise too_large(what, "max_agent_files", limits.max_agent_files)
        if member.issparse() or not (member.isfile() or member.isdir()):
            raise InvalidAgentError(f"upload: {member.name}: only files and folders are allowed")
        if member.size > limits.max_file_bytes:
            what = f"upload: {member.name} is {member.size} bytes"
            raise too_large(what, "max_file_bytes", limits.max_file_bytes)
        total += member.size
        if total > limits.max_agent_bytes:
            what = f"upload expands to more than {limits.max_agent_bytes} bytes"
            raise too_large(what, "max_agent_bytes", limits.max_agent_bytes)
        try:
            archive.extract(member, dest, filter="data")
        except tarfile.FilterError as exc:
            raise InvalidAgentError(f"upload: {exc}") from exc


def _inside(filename: object, dest: Path) -> bool:
    return isinstance(filename, str) and Path(filename).is_relative_to(dest)


def strip_single_top_folder(dest: Path) -> None:
    """`tar czf x.tgz myagent/` wraps everything in one folder; the agent's root is inside it."""
    entries = list(dest.iterdir())
    if len(entries) == 1 and entries[0].is_dir() and not (dest / "agent.toml").exists():
        # Moved aside first: the folder may hold an entry of its own name (`x/x/...`).
        inner = entries[0].rename(dest / f".clade-{uuid.uuid4().hex}")
        for child in inner.iterdir():
            child.rename(dest / child.name)
        inner.rmdir()
