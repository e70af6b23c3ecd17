"""The harbor benchmark's options (`benchmark.options` of a run configuration)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator

from benchmarks.userfiles import folder_option
from contracts.benchmark_options import Options

__all__ = ["HarborOptions"]


class HarborOptions(Options):
    """Harbor task folders (Terminal-Bench 2.x and Harbor's adapters): docs/harbor.md."""

    # One task folder (it holds task.toml) or a folder of them, at any depth.
    path: Path
    # Only these tasks (folder names), in this order; default: all.
    tasks: list[str] | None = Field(default=None, min_length=1)
    # Task name -> an image to use as it is instead of building environment/Dockerfile (one
    # built where there is network, say).
    images: dict[str, str] = Field(default_factory=dict)
    # A FROM image of the Dockerfiles -> a local image that stands in for it (builds are
    # offline: a FROM image the engine lacks cannot be pulled). Mapped images build as root.
    base_images: dict[str, str] = Field(default_factory=dict)
    # The reward that counts as resolved (Harbor's binary tasks reward 1).
    pass_reward: float = Field(default=1.0, gt=0.0, le=1.0)
    # Caps on task.toml's own resources, for the verifier's sandbox.
    max_memory_mb: int = Field(default=4096, ge=256)
    max_cpus: float = Field(default=2.0, gt=0)
    # Tasks Clade cannot run (multi-step, a separate verifier environment) are left out and
    # listed, instead of failing the whole folder.
    skip_unsupported: bool = False

    @field_validator("path")
    @classmethod
    def _path_is_a_folder(cls, value: Path) -> Path:
        return folder_option(value)
