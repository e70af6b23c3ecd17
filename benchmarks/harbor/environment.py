"""A Harbor task's environment image: named (used as it is) or built from environment/Dockerfile.

Builds are offline (`ImageStore.from_dockerfile`). `base_images` lets a machine without a
registry stand its own images in for the Dockerfile's `FROM` images: the line is rewritten and
followed by `USER root`, as the public images Harbor tasks start from run as root. The tag is
a digest of the (rewritten) build context, so a changed file builds a new image.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from benchmarks.harbor.layout import HarborTask
from sandbox.base import ImageStore, Progress

TAG_PREFIX = "clade/harbor-"
_FROM = re.compile(r"^(\s*FROM\s+)(?:--platform=\S+\s+)?(\S+)(.*)$", re.IGNORECASE)


def named_image(task: HarborTask, images: Mapping[str, str]) -> str | None:
    """The image the task names (the run's `images` option first), or None to build."""
    return images.get(task.name) or task.docker_image


def rewrite_dockerfile(text: str, base_images: Mapping[str, str]) -> str:
    """`text` with each mapped FROM image replaced by its stand-in, run as root."""
    lines = []
    for line in text.splitlines():
        matched = _FROM.match(line)
        if matched is not None and matched.group(2) in base_images:
            lines.append(f"{matched.group(1)}{base_images[matched.group(2)]}{matched.group(3)}")
            lines.append("USER root")
            continue
        lines.append(line)
    return "\n".join(lines) + "\n"


def context_digest(context: Path, dockerfile: str) -> str:
    """sha256 over every file of the build context (paths and bytes) and the Dockerfile used."""
    digest = hashlib.sha256(dockerfile.encode())
    for path in sorted(p for p in context.rglob("*") if p.is_file() or p.is_symlink()):
        relative = path.relative_to(context).as_posix()
        if relative == "Dockerfile":
            continue
        digest.update(b"\0" + relative.encode() + b"\0")
        if path.is_symlink():
            digest.update(str(path.readlink()).encode())
            continue
        with path.open("rb") as handle:  # in chunks: a context may hold files of gigabytes
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()


def image_tag(task: HarborTask, base_images: Mapping[str, str]) -> str:
    """The tag the task's built image has (or will have)."""
    if task.environment is None:
        raise ValueError(f"{task.name} names its image")
    dockerfile = rewrite_dockerfile((task.environment / "Dockerfile").read_text(), base_images)
    return f"{TAG_PREFIX}{task.name.lower()}:{context_digest(task.environment, dockerfile)[:12]}"


def build_image(
    task: HarborTask, store: ImageStore, base_images: Mapping[str, str], tag: str, progress: Progress
) -> str:
    """The task's image from its Dockerfile, built once as `tag` (its `image_tag`; SandboxUnavailable
    when it cannot be)."""
    if task.environment is None:
        raise ValueError(f"{task.name} names its image")
    with tempfile.TemporaryDirectory(prefix="clade-harbor-build-") as tmp:
        context = Path(tmp) / "context"
        shutil.copytree(task.environment, context, symlinks=True)
        original = (task.environment / "Dockerfile").read_text()
        (context / "Dockerfile").write_text(rewrite_dockerfile(original, base_images))
        return store.from_dockerfile(context, tag, timeout_s=task.build_timeout_s, progress=progress)
