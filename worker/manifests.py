"""Reading `agent.toml` out of an agent's code archive."""

from __future__ import annotations

import io
import tarfile

from contracts.manifest import MANIFEST_FILE, AgentManifest, parse_manifest


def manifest_from_tar(tar_bytes: bytes) -> AgentManifest:
    """Raises InvalidAgentError when agent.toml is missing or invalid."""
    with tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:*") as tar:
        try:
            member = tar.extractfile(MANIFEST_FILE)
        except KeyError:
            member = None
        return parse_manifest(member.read() if member is not None else None)
