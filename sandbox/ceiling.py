"""The most any one sandbox may take of this host, whatever a run or a benchmark asks for.

A run's limits and a benchmark's options name a sandbox's memory, CPUs and pids; a typo
(or a hostile run configuration) must not make one sandbox take the whole worker host.
Backends clamp every spec to a `ResourceCeiling` before they start it, and log when they
do: a sandbox that asked for more gets the ceiling.
"""

from __future__ import annotations

import logging
import os

from pydantic import BaseModel, ConfigDict, Field

from sandbox.base import SandboxSpec

log = logging.getLogger(__name__)

# Kept for the worker itself, its gateway threads, git and the engine.
MEMORY_RESERVE_MB = 1024
DEFAULT_MAX_PIDS = 4096


class ResourceCeiling(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    memory_mb: int = Field(ge=64)
    cpus: float = Field(gt=0)
    pids: int = Field(ge=8)

    @classmethod
    def for_host(
        cls, memory_mb: int | None = None, cpus: float | None = None, pids: int | None = None
    ) -> ResourceCeiling:
        """The given ceilings; each one not given: this host's memory less a reserve (at least
        a quarter of it), its CPU count, DEFAULT_MAX_PIDS."""
        if memory_mb is None:
            total = host_memory_mb()
            memory_mb = max(total - MEMORY_RESERVE_MB, total // 4, 64)
        return cls(
            memory_mb=memory_mb,
            cpus=cpus if cpus is not None else float(os.cpu_count() or 1),
            pids=pids if pids is not None else DEFAULT_MAX_PIDS,
        )

    def clamp(self, spec: SandboxSpec) -> SandboxSpec:
        """`spec` with each resource at most the ceiling's (logged when one is lowered)."""
        lowered = {
            name: ceiling
            for name, asked, ceiling in (
                ("memory_mb", spec.memory_mb, self.memory_mb),
                ("cpus", spec.cpus, self.cpus),
                ("pids", spec.pids, self.pids),
            )
            if asked > ceiling
        }
        if not lowered:
            return spec
        log.warning(
            "sandbox from %s asked for more than this host allows; lowered to %s",
            spec.image,
            ", ".join(f"{name}={value}" for name, value in lowered.items()),
        )
        return spec.model_copy(update=lowered)


def host_memory_mb() -> int:
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024))
