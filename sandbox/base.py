"""The sandbox seam: a protocol every backend implements and the records it returns.

A backend owns both halves of an environment: the images its sandboxes start from
(`ImageStore`: found, built or pulled on request) and the sandboxes themselves
(`SandboxBackend.start`). Benchmarks and the worker ask it for both; nothing else talks
to the engine. A command that fails is a result (`ExecResult` with its exit code); a
sandbox that cannot be started or has broken is an exception (`SandboxError`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from sandbox.images.recipes import LayeredImage

Progress = Callable[[str], None]

LABEL_PREFIX = "dev.clade"
OWNER_LABEL = f"{LABEL_PREFIX}.owner"
# What a labelled container is ("sandbox", "image-build") and which backend made it.
ROLE_LABEL = f"{LABEL_PREFIX}.role"
BACKEND_LABEL = f"{LABEL_PREFIX}.backend"


class SandboxError(RuntimeError):
    """The sandbox itself failed (could not start, vanished, engine unreachable).

    Root of the sandbox exceptions; subclasses say more precisely what went wrong.
    """


class SandboxUnavailable(SandboxError):
    """The backend cannot run on this host (no engine, missing image)."""


class SandboxFileError(SandboxError, OSError):
    """A file could not be read or written inside a sandbox that is itself fine.

    Missing file, permission denied, read-only path, larger than `max_bytes`.
    """


class Mount(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: Path
    target: str
    read_only: bool = True


class SandboxSpec(BaseModel):
    """Everything a backend needs to start one hardened sandbox."""

    model_config = ConfigDict(extra="forbid")

    image: str
    mounts: list[Mount] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    workdir: str = "/clade"
    memory_mb: int = Field(default=2048, ge=64)
    cpus: float = Field(default=1.0, gt=0)
    pids: int = Field(default=256, ge=8)
    tmpfs_mb: int = Field(default=512, ge=1)
    # Programs written to /tmp may run (compilers build test binaries there); the tmpfs
    # keeps its size limit either way.
    tmpfs_exec: bool = False
    output_cap_bytes: int = Field(default=1_000_000, ge=1024)
    # The most the sandbox may add to its read-write mounts (host folders) before every process
    # in it is killed; None: the backend's default; 0: not watched (the caller bounds them).
    writable_limit_mb: int | None = Field(default=None, ge=0)
    labels: dict[str, str] = Field(default_factory=dict)
    network: Literal["none"] = "none"


class ExecResult(BaseModel):
    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool = False
    output_truncated: bool = False
    duration_s: float


class Sandbox(Protocol):
    """One running sandbox. `close` removes it and everything it wrote outside its mounts.

    `exec` runs as the sandbox user; when `timeout_s` passes, the command and every
    process it started are killed and the result says `timed_out=True`.
    `write_file` creates missing parent directories; both file methods raise
    `SandboxFileError` when the operation is refused inside the sandbox.
    """

    @property
    def id(self) -> str: ...

    def exec(
        self,
        command: list[str],
        *,
        timeout_s: float,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> ExecResult: ...

    def write_file(self, path: str, data: bytes) -> None: ...

    def read_file(self, path: str, *, max_bytes: int = 10_000_000) -> bytes: ...

    def close(self) -> None: ...


class ImageStore(Protocol):
    """The images a backend's sandboxes start from. Clade's own (base, agent layers, a
    benchmark's `LayeredImage`) are built here, never pulled, and cached by a digest of their
    inputs; a task's own image is used as it is and pulled by name when absent.

    Every method raises `SandboxUnavailable` naming the image when it cannot be had, and
    `SandboxError` when the engine fails; `progress` receives one line per build step.
    """

    def exists(self, image: str) -> bool:
        """Whether the engine has `image` (never built or pulled by asking)."""
        ...

    def base(self, *, progress: Progress | None = None) -> str:
        """Tag of Clade's base image (Python and the seed agent's requirements)."""
        ...

    def for_agent(self, requirements: Sequence[str], *, progress: Progress | None = None) -> str:
        """The base image plus `requirements` as a cached layer; the base tag without any."""
        ...

    def for_task(self, image: str, *, progress: Progress | None = None) -> str:
        """A task's own image as it is, pulled when absent."""
        ...

    def runtime(self, image: str, *, progress: Progress | None = None) -> Path:
        """Host folder of the agent runtime made from `image` (the base or an agent image),
        to be mounted read-only into any task image."""
        ...

    def build(self, recipe: LayeredImage, *, progress: Progress | None = None) -> str:
        """A benchmark's own image (e.g. polyglot's toolchains), built once; its tag."""
        ...

    def from_dockerfile(
        self, context: Path, tag: str, *, timeout_s: float, progress: Progress | None = None
    ) -> str:
        """A task's own image built from `context/Dockerfile` as `tag`, once, offline (no
        network for any step, no pulls): `SandboxUnavailable` with the build's error when a step
        fails or its `FROM` image is absent."""
        ...

    def copy_out(self, image: str, source: str, dest: Path) -> Path:
        """Copy the folder `source` of `image` to `dest/<its name>` without running the image;
        that path. `SandboxFileError` when the image has no such folder."""
        ...


class SandboxBackend(Protocol):
    name: str

    @property
    def images(self) -> ImageStore:
        """The images this backend's sandboxes start from, on the same engine."""
        ...

    def start(self, spec: SandboxSpec) -> Sandbox: ...

    def remove_orphans(self, owner: str | None = None) -> list[str]:
        """Remove this backend's sandboxes (all, or one owner's), live or not; return their ids."""
        ...

    def remove_abandoned(self) -> list[str]:
        """Remove this backend's sandboxes whose starting process is gone, whatever their owner
        (see `sandbox.liveness`); a live process's sandboxes stay. Return the removed ids."""
        ...
