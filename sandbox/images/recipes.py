"""A benchmark's own image, described without naming an engine: which base image it starts
from, the host folders copied into it, the commands run in it (as root, no network) and the
configuration it is committed with. A backend's `ImageStore.build` makes it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sandbox.base import Progress
from sandbox.images.build import BaseImageRecipe
from sandbox.images.layers import ImageConfig

# (scratch folder, image cache folder, progress) -> [(host folder, folder in the image)]:
# called only when the image is built, so that costly inputs (an npm tree) are made then.
FilesMaker = Callable[[Path, Path, Progress], list[tuple[Path, str]]]


@dataclass(frozen=True)
class LayeredImage:
    """One layer of files and commands over Clade's base image of `base`'s recipe.

    `tag` must change whenever any input does (a digest of them): an image of that tag is
    reused as it is.
    """

    tag: str
    base: BaseImageRecipe
    files: FilesMaker
    commands: tuple[tuple[str, ...], ...]
    config: ImageConfig
