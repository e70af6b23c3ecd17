"""The folder benchmark's options (`benchmark.options` of a run configuration)."""

from __future__ import annotations

from pathlib import Path

from pydantic import field_validator

from benchmarks.userfiles import folder_option
from contracts.benchmark_options import Options

__all__ = ["FolderOptions"]


class FolderOptions(Options):
    """A benchmark folder of the user's own (docs/own-benchmark.md)."""

    # tasks/<id>/task.json, repos/<repo>/...
    path: Path

    @field_validator("path")
    @classmethod
    def _path_is_a_folder(cls, value: Path) -> Path:
        return folder_option(value)
