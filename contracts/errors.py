"""Errors of the archive; each is also the builtin exception a caller would expect."""

from __future__ import annotations


class ArchiveError(Exception):
    """Root of the archive's errors."""


class NotFoundError(ArchiveError, KeyError):
    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else "not found"


class PatchError(ArchiveError, ValueError):
    """A patch was refused: it does not apply, is empty, or is too large."""


class InvalidAgentError(ArchiveError, ValueError):
    """A seed or child is not a valid agent (no agent.toml, no solve command)."""


class ConflictError(ArchiveError, RuntimeError):
    """A state change that is impossible from the current state."""


class StorageFullError(ArchiveError, OSError):
    """The archive's disk (or quota) is full: nothing was written; the same request works once
    space is freed, so callers retry it (HTTP 507) rather than take it as a refusal."""
