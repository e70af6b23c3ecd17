"""Sandbox backends by name: Clade's own (Docker) and those other packages register.

A package adds a backend with an entry point in the `clade.sandbox_backends` group whose
value is a `BackendEntry`:

    [project.entry-points."clade.sandbox_backends"]
    podman = "clade_podman:BACKEND"      # BACKEND = BackendEntry(factory=PodmanBackend)

Every factory accepts `owner: str` (the label that lets one worker find its orphans) and the
keyword options the worker passes: `ceiling` (`ResourceCeiling`), `writable_limit_mb` and
`image_cache_dir`. Implementations are imported only when asked for. A backend that
does not isolate agent code (`isolated=False`: a host subprocess, say) is refused unless the
caller passes `allow_unsafe=True` (the worker: `CLADE_SANDBOX_ALLOW_UNSAFE`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from sandbox.base import ImageStore, SandboxBackend, SandboxError

BackendFactory = Callable[..., SandboxBackend]
ENTRY_POINT_GROUP = "clade.sandbox_backends"
DEFAULT_BACKEND = "docker"
UNSAFE_SETTING = "CLADE_SANDBOX_ALLOW_UNSAFE"


@dataclass(frozen=True)
class BackendEntry:
    """How to make a backend, and whether its sandboxes isolate what runs in them (network
    none, limits, a root filesystem of their own, no host files but the mounts)."""

    factory: BackendFactory
    isolated: bool = True


class UnknownBackend(SandboxError, LookupError):
    """No backend is registered under that name."""


class UnsafeBackend(SandboxError):
    """The backend runs agent code without isolation and the caller did not allow that."""


def _docker(**options: Any) -> SandboxBackend:
    from sandbox.docker_backend import DockerBackend

    return DockerBackend(**options)


_BUILT_IN: dict[str, BackendEntry] = {DEFAULT_BACKEND: BackendEntry(_docker)}


def _plugins() -> dict[str, EntryPoint]:
    """Entry points of installed packages; a built-in name is never taken over."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name not in _BUILT_IN}


def backend_names() -> list[str]:
    return sorted({*_BUILT_IN, *_plugins()})


def backend_entry(name: str) -> BackendEntry:
    """The registered entry of `name`; `UnknownBackend` (listing the known names) without one."""
    if name in _BUILT_IN:
        return _BUILT_IN[name]
    plugin = _plugins().get(name)
    if plugin is None:
        known = ", ".join(backend_names())
        raise UnknownBackend(f"unknown sandbox backend {name!r}; known: {known}")
    try:
        entry = plugin.load()
    except (ImportError, AttributeError) as exc:
        raise UnknownBackend(f"sandbox backend {name!r} ({plugin.value}) cannot be loaded: {exc}") from exc
    if not isinstance(entry, BackendEntry):
        raise UnknownBackend(
            f"sandbox backend {name!r} ({plugin.value}, group {ENTRY_POINT_GROUP}) is not a "
            f"sandbox.registry.BackendEntry but {type(entry).__name__}"
        )
    return entry


def get_backend(name: str, *, allow_unsafe: bool = False, **options: Any) -> SandboxBackend:
    """A ready backend; raises `UnknownBackend`, `UnsafeBackend` or `SandboxUnavailable`."""
    entry = backend_entry(name)
    if not entry.isolated and not allow_unsafe:
        raise UnsafeBackend(
            f"sandbox backend {name!r} does not isolate the code it runs; use it only with agents "
            f"you trust, by setting {UNSAFE_SETTING}=true"
        )
    return entry.factory(**options)


def default_images() -> ImageStore:
    """The image store of the default backend (Docker) on this host's engine (DOCKER_HOST), for
    a caller given no backend; `SandboxUnavailable` without an engine."""
    return get_backend(DEFAULT_BACKEND, owner="clade-images").images
