"""The sizes a client can make an agent reach, and the error that refuses more."""

from __future__ import annotations

from dataclasses import dataclass

from contracts.errors import ArchiveError
from contracts.settings import Settings


class TooLargeError(ArchiveError, ValueError):
    """Something a client sent is over a configured limit (HTTP 413)."""


@dataclass(frozen=True)
class AgentLimits:
    max_agent_bytes: int
    max_agent_files: int
    max_file_bytes: int

    @classmethod
    def defaults(cls) -> AgentLimits:
        """The settings' defaults, for an archive opened without settings (scripts, tests)."""
        fields = Settings.model_fields
        return cls(
            max_agent_bytes=fields["max_agent_bytes"].default,
            max_agent_files=fields["max_agent_files"].default,
            max_file_bytes=fields["max_file_bytes"].default,
        )

    @classmethod
    def from_settings(cls, settings: Settings) -> AgentLimits:
        return cls(
            max_agent_bytes=settings.max_agent_bytes,
            max_agent_files=settings.max_agent_files,
            max_file_bytes=settings.max_file_bytes,
        )


def too_large(what: str, setting: str, value: int) -> TooLargeError:
    """The error for `what` over the limit `setting`, naming both."""
    return TooLargeError(f"{what}; {limit_text(setting, value)}")


def limit_text(setting: str, value: int) -> str:
    """'the limit is 1048576 bytes (max_file_bytes, CLADE_MAX_FILE_BYTES)': what and where to raise it."""
    unit = "" if setting.endswith("_files") else " bytes"
    return f"the limit is {value}{unit} ({setting}, CLADE_{setting.upper()})"
