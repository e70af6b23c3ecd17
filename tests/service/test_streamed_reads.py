"""An agent's code and exports are streamed from git: complete and byte for byte right."""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
from pathlib import Path

from tests.helpers import tar_of, write_agent
from tests.servers import AppService
from tests.service.helpers import binary_patch, open_step_in, start_run

LONG_NAME = "deep/" + "n" * 120 + ".txt"  # over the 100 bytes a plain tar header holds


def _files(data: bytes, prefix: str, mode: str = "r:*") -> dict[str, bytes]:
    """Regular files of a tar under `prefix`, by their name below it."""
    with tarfile.open(fileobj=io.BytesIO(data), mode=mode) as tar:
        return {
            member.name.removeprefix(prefix): tar.extractfile(member).read()  # type: ignore[union-attr]
            for member in tar.getmembers()
            if member.isfile() and member.name.startswith(prefix)
        }


def test_code_and_exports_hold_every_file_whole(service: AppService, tmp_path: Path) -> None:
    # Files larger than one streamed chunk, and a name that needs a pax header.
    files = {"blobs/a.bin": os.urandom(300_000), "blobs/b.bin": os.urandom(700_001), LONG_NAME: b"x\n"}
    root = write_agent(tmp_path / "agent")
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    expected = {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    with service.admin as admin:
        seed = admin.post("/api/seeds", files={"file": ("a.tgz", tar_of(root))}).json()["id"]
    step = open_step_in(service.database_url, run_id=start_run(service, seed), parent_id=seed)
    added = os.urandom(400_000)
    with service.worker as worker:
        child = worker.post(
            f"/api/worker/steps/{step}/child", json={"patch": binary_patch({"blobs/c.bin": added})}
        ).json()["id"]
        assert _files(worker.get(f"/api/worker/agents/{seed}/code").content, "", "r:") == expected
    expected_child = expected | {"blobs/c.bin": added}

    with service.anonymous as reader:
        code = reader.get(f"/api/agents/{child}/code")
        assert code.headers["content-type"] == "application/gzip"
        assert _files(code.content, f"agent-{child[:12]}/", "r:gz") == expected_child

        exported = _files(reader.get(f"/api/agents/{child}/export").content, f"agent-{child[:12]}/", "r:gz")
        metadata = json.loads(exported.pop("metadata.json"))
        assert metadata["lineage"] == [seed, child]
        assert {name.removeprefix("code/"): data for name, data in exported.items()} == expected_child

        bundle = tmp_path / "child.bundle"
        bundle.write_bytes(reader.get(f"/api/agents/{child}/bundle").content)
        series = reader.get(f"/api/agents/{child}/patches").content

    # The bundle clones; the patch series, applied to the seed, gives the child's tree.
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(bundle), str(clone)], check=True)
    git = ["git", "-C", str(clone), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "checkout", "-q", child], check=True)
    assert (clone / "blobs" / "c.bin").read_bytes() == added and (clone / LONG_NAME).read_bytes() == b"x\n"
    subprocess.run([*git, "checkout", "-q", seed], check=True)
    subprocess.run([*git, "am", "-q"], input=series, check=True)
    trees = [
        subprocess.run([*git, "rev-parse", f"{rev}^{{tree}}"], capture_output=True, text=True).stdout
        for rev in ("HEAD", child)
    ]
    assert trees[0] == trees[1]
