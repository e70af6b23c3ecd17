"""An agent's code whose links lead out of it when unpacked is the agent's fault, named.

Such an archive can no longer be made (the archive resolves links through one another), but
one archived before could: unpacking it must say which link, as an invalid agent.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from contracts.errors import InvalidAgentError
from worker.workspace import Workspace


def _tar_with_chained_links() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        manifest = b'name = "chained"\nsolve = "true"\n'
        info = tarfile.TarInfo("agent.toml")
        info.size = len(manifest)
        tar.addfile(info, io.BytesIO(manifest))
        folder = tarfile.TarInfo("nest")
        folder.type = tarfile.DIRTYPE
        tar.addfile(folder)
        for name, target in (("nest/up", ".."), ("escape", "nest/up/..")):
            link = tarfile.TarInfo(name)
            link.type, link.linkname = tarfile.SYMTYPE, target
            tar.addfile(link)
    return buffer.getvalue()


def test_code_whose_links_lead_out_when_unpacked_is_an_invalid_agent(tmp_path: Path) -> None:
    with Workspace(tmp_path / "work", tmp_path / "sock", disk_enforcement="watch") as ws:
        with pytest.raises(InvalidAgentError, match="escape"):
            ws.unpack_agent(_tar_with_chained_links())
        assert not (ws.agent / "escape").exists()
