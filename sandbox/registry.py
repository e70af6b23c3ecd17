"""Sandbox backends by name. Implementations are imported only when asked for.

Every factory accepts `owner: str` (the label that lets one worker find its orphans)
plus its own keyword options.
"""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType
from typing import Any

from sandbox.base import ImageStore, SandboxBackend, SandboxError

BackendFactory = Callable[..., SandboxBackend]


class UnknownBackend(SandboxError, LookupError):
    """No backend is registered under that name."""


def _docker(**options: Any) -> SandboxBackend:
    from sandbox.docker_backend import DockerBackend

    return DockerBackend(**options)


DEFAULT_BACKEND = "docker"
BACKENDS: MappingProxyType[str, BackendFactory] = MappingProxyType({"docker": _docker})


def backend_names() -> list[str]:
    return sorted(BACKENDS)


def get_backend(name: str, **options: Any) -> SandboxBackend:
    """A ready backend; raises `UnknownBackend` (listing the known names) or `SandboxUnavailable`."""
    try:
        factory = BACKENDS[name]
    except KeyError:
        known = ", ".join(backend_names())
        raise UnknownBackend(f"unknown sandbox backend {name!r}; known: {known}") from None
    return factory(**options)


def default_images() -> ImageStore:
    """The image store of the default backend (Docker) on this host's engine (DOCKER_HOST), for
    a caller given no backend; `SandboxUnavailable` without an engine."""
    return get_backend(DEFAULT_BACKEND, owner="clade-images").images
