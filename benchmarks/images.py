"""Images a benchmark needs besides Clade's base image, by benchmark name, built on request.

    clade images build --benchmark polyglot

A builder takes the sandbox backend's image store (`sandbox.base.ImageStore`) and a progress
callback and returns the tag; builders are imported only when asked for.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from benchmarks.base import UnknownBenchmark
from sandbox.base import ImageStore

ImageBuilder = Callable[..., str]

_BUILDERS: dict[str, str] = {
    "polyglot": "benchmarks.polyglot.image:ensure_polyglot_image",
}


def benchmarks_with_images() -> list[str]:
    return sorted(_BUILDERS)


def has_image(name: str) -> bool:
    return name in _BUILDERS


def build_benchmark_image(name: str, images: ImageStore, *, progress: Callable[[str], None]) -> str:
    """Build (or reuse) the image of benchmark `name`; its tag."""
    if name not in _BUILDERS:
        known = ", ".join(benchmarks_with_images()) or "none"
        raise UnknownBenchmark(f"benchmark {name!r} has no image of its own (those that do: {known})")
    module_name, _, attribute = _BUILDERS[name].partition(":")
    builder: ImageBuilder = getattr(importlib.import_module(module_name), attribute)
    return builder(images, progress=progress)
