"""The folder benchmark's options (`benchmark.options` of a run configuration)."""

from __future__ import annotations

from pathlib import Path

from pydantic import field_validator

from contracts.benchmark_options import Options

__all__ = ["FolderOptions"]


class FolderOptions(Options):
    """A benchmark folder of the user's own (docs/own-benchmark.md)."""

    # tasks/<id>/task.json, repos/<repo>/...
    path: Path

    @field_validator("path")
    @classmethod
    def _path_is_a_folder(cls, value: Path) -> Path:
        value = value.expanduser()
        if not value.is_dir():
            raise ValueError(f"{value} is not a folder")
        return value.resolve()
