"""A task's own image built from its Dockerfile, offline: no network for any step, no pulls.

Benchmarks that ship an environment as a Dockerfile (Harbor's task folders) are built here
through the engine's build API with `network_mode=none` and `pull=False`: a `FROM` image the
engine lacks, or a `RUN` step that needs the network (`apt-get`, `pip install`), fails the
build, and the error names the step and the last lines of its output. Images are tagged by
their caller (a digest of the build context) and built once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from docker.errors import APIError, BuildError, DockerException

from sandbox.base import BACKEND_LABEL, OWNER_LABEL, ROLE_LABEL, Progress, SandboxError, SandboxUnavailable
from sandbox.images.layers import IMAGE_ROLE

_LOG_LINES = 20
_LABELS = {OWNER_LABEL: "clade-images", ROLE_LABEL: IMAGE_ROLE, BACKEND_LABEL: "docker"}


def build_dockerfile(client: Any, context: Path, tag: str, *, timeout_s: float, progress: Progress) -> str:
    """Build `context/Dockerfile` as `tag`; raise SandboxUnavailable with the build's error."""
    if not (context / "Dockerfile").is_file():
        raise SandboxUnavailable(f"cannot build {tag}: {context} has no Dockerfile")
    seen: list[str] = []
    try:
        stream = client.api.build(
            path=str(context),
            tag=tag,
            network_mode="none",
            pull=False,
            rm=True,
            forcerm=True,
            decode=True,
            labels=dict(_LABELS),
            timeout=max(int(timeout_s), 1),
        )
        _follow(stream, seen, progress)
    except BuildFailed as exc:
        tail = "\n".join(seen[-_LOG_LINES:])
        raise SandboxUnavailable(
            f"cannot build {tag} from {context / 'Dockerfile'} (offline: no network, no pulls): {exc}\n{tail}"
        ) from exc
    except (BuildError, APIError) as exc:
        raise SandboxUnavailable(f"cannot build {tag} from {context / 'Dockerfile'}: {exc}") from exc
    except (DockerException, OSError) as exc:
        raise SandboxError(f"building {tag} failed: {exc}") from exc
    return tag


class BuildFailed(Exception):
    """The engine reported an error while building (a step's exit status, a missing base)."""


def _follow(stream: Iterable[Mapping[str, Any]], seen: list[str], progress: Progress) -> None:
    for chunk in stream:
        if "error" in chunk:
            raise BuildFailed(str(chunk["error"]).strip())
        text = str(chunk.get("stream", "")).rstrip()
        if not text:
            continue
        for line in text.splitlines():
            seen.append(line)
            if line.startswith("Step "):
                progress(line)
