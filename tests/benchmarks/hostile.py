"""Making a benchmark folder hostile, for the loaders' refusal tests."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path


def replace(path: Path, make: Callable[[Path], object]) -> None:
    """Put what `make` makes (a link, a FIFO, a folder) where `path` is."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
    make(path)


def link_to(target: str) -> Callable[[Path], None]:
    return lambda path: path.symlink_to(target)
