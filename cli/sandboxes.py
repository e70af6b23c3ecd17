"""The configured sandbox backend of this machine, for commands that build images or grade here."""

from __future__ import annotations

from contracts.settings import get_settings
from sandbox.base import SandboxBackend
from sandbox.registry import get_backend


def local_backend(owner: str) -> SandboxBackend:
    """`CLADE_SANDBOX_BACKEND` with this machine's image cache; `SandboxUnavailable` without an engine."""
    settings = get_settings()
    return get_backend(
        settings.sandbox_backend,
        allow_unsafe=settings.sandbox_allow_unsafe,
        owner=owner,
        image_cache_dir=settings.image_cache_dir,
    )
