"""Limits on everything a client can make large, damaged tarballs, and the service's scratch space."""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from service.archive.binary_patch import declared_sizes
from tests.helpers import AGENT_TOML, import_seed, tar_of, write_agent
from tests.servers import AppService, app_service, free_port, service_env, start_service
from tests.service.helpers import (
    MIB,
    agent_refs,
    binary_patch,
    core_patch,
    object_count,
    open_step_in,
    refusal,
    row_counts,
    start_run,
    zeros_tar_gz,
)

LIMITS = {
    "CLADE_MAX_AGENT_BYTES": str(4 * MIB),
    "CLADE_MAX_AGENT_FILES": "50",
    "CLADE_MAX_FILE_BYTES": str(MIB),
}


@pytest.fixture
def limited(tmp_path: Path, database_url: str) -> Iterator[AppService]:
    """The service with small limits, so that going over them is quick."""
    with app_service(service_env(tmp_path / "data", database_url, free_port(), **LIMITS)) as app:
        yield app


def _state(service: AppService) -> tuple[dict[str, int], set[str], int]:
    data = service.data_dir
    return row_counts(service.database_url), agent_refs(data), object_count(data)


def _assert_scratch_empty(service: AppService) -> None:
    assert list((service.data_dir / "tmp").iterdir()) == []


def _post_seed(service: AppService, data: bytes) -> httpx.Response:
    with service.admin as client:
        return client.post("/api/seeds", files={"file": ("a.tgz", data)})


def _refused(response: httpx.Response, status: int, *words: str) -> None:
    assert response.status_code == status, response.text
    # A 422 is a list of issues (one shape for every 422); other refusals carry one message.
    detail = refusal(response)[1] if status == 422 else response.json()["detail"]
    assert all(word in detail for word in words), detail


def test_decompression_bombs_are_refused_before_they_are_written(limited: AppService) -> None:
    before = _state(limited)
    # About 1 MB each, 1 GiB unpacked: one huge file, then a thousand files of 1 MiB.
    one_file = zeros_tar_gz({"agent.toml": 0, "weights.bin": 1024 * MIB})
    many_files = zeros_tar_gz({f"part-{n:04d}.bin": MIB for n in range(1024)})
    assert len(one_file) < 2 * MIB and len(many_files) < 2 * MIB
    _refused(_post_seed(limited, one_file), 413, "weights.bin", "max_file_bytes", "CLADE_MAX_FILE_BYTES")
    _refused(_post_seed(limited, many_files), 413, "max_agent_bytes", "CLADE_MAX_AGENT_BYTES")
    assert _state(limited) == before
    _assert_scratch_empty(limited)


def test_too_many_files_are_refused(limited: AppService, tmp_path: Path) -> None:
    before = _state(limited)
    root = write_agent(tmp_path / "crowd", {f"many/{n}.txt": "x" for n in range(60)})
    _refused(_post_seed(limited, tar_of(root)), 413, "max_agent_files", "CLADE_MAX_AGENT_FILES")
    assert _state(limited) == before


def test_damaged_tarballs_are_refused_with_422(limited: AppService, tmp_path: Path) -> None:
    before = _state(limited)
    whole = tar_of(write_agent(tmp_path / "agent", {"data.txt": os.urandom(8000).hex()}))
    _refused(_post_seed(limited, whole[: len(whole) // 2]), 422, "damaged tar archive")
    for name in ("n" * 300 + ".py", "/".join(["d" * 200] * 25) + "/x.py"):  # a name, a path too long
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
            for member, data in (("agent.toml", AGENT_TOML.encode()), (name, b"x = 1\n")):
                info = tarfile.TarInfo(member)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        _refused(_post_seed(limited, buffer.getvalue()), 422, "File name too long")
    # A pax record is read whole into memory: one of 64 MiB is refused from its header.
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("agent.toml")
        info.pax_headers = {"comment": "x" * 64 * MIB}
        tar.addfile(info, io.BytesIO(b""))
    _refused(_post_seed(limited, buffer.getvalue()), 422, "extended tar header")
    assert _state(limited) == before
    _assert_scratch_empty(limited)


def test_child_over_the_limits_writes_nothing(limited: AppService, tmp_path: Path) -> None:
    seed_id = import_seed(limited, tmp_path)
    step_id = open_step_in(limited.database_url, run_id=start_run(limited, seed_id), parent_id=seed_id)
    before = _state(limited)
    # 12 kB of patch, 2 MiB of file: refused from the binary hunk's declared size.
    big_blob = binary_patch({"model.bin": bytes(2 * MIB)})
    assert len(big_blob) < 16_000
    # Five files under the file limit that together pass the agent limit: refused from the tree.
    big_agent = binary_patch({f"shard-{n}.bin": bytes(MIB - 1) for n in range(5)})
    with limited.worker as worker:
        url = f"/api/worker/steps/{step_id}/child"
        _refused(worker.post(url, json={"patch": big_blob}), 413, "max_file_bytes", "CLADE_MAX_FILE_BYTES")
        _refused(worker.post(url, json={"patch": big_agent}), 413, "max_agent_bytes", "CLADE_MAX_AGENT_BYTES")
        assert _state(limited) == before  # not even a git object
        _assert_scratch_empty(limited)
        # The step is still open: a child within the limits is taken.
        small = binary_patch({"model.bin": bytes(MIB // 2)})
        assert worker.post(url, json={"patch": small}).status_code == 200
    rows, refs, _ = _state(limited)
    assert rows["agents"] == before[0]["agents"] + 1 and len(refs) == len(before[1]) + 1


def test_a_binary_delta_declares_its_target_size(tmp_path: Path) -> None:
    """A delta hunk is small; the size it builds is read from its header before git inflates it."""
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    blob = os.urandom(100_000)
    (repo / "f.bin").write_bytes(blob)
    subprocess.run(["git", "-C", str(repo), "add", "f.bin"], check=True)
    (repo / "f.bin").write_bytes(blob + bytes(300_000))
    patch = subprocess.run(
        ["git", "-C", str(repo), "diff", "--binary"], capture_output=True, text=True, check=True
    ).stdout
    assert "\ndelta " in patch
    assert 400_000 in set(declared_sizes(patch))


def test_a_chunked_body_over_the_limit_is_refused_while_it_streams(tmp_path: Path) -> None:
    env = service_env(tmp_path / "data", None, 0, CLADE_MAX_UPLOAD_BYTES=str(MIB))
    service = start_service(env)
    sent = 0

    def body() -> Iterator[bytes]:  # no length known up front: sent with chunked framing
        nonlocal sent
        yield b'{"patch": "'
        for _ in range(64):
            sent += 64 * 1024
            yield b"x" * (64 * 1024)
        yield b'"}'

    try:
        with service.worker as worker:
            response = worker.post(
                "/api/worker/steps/any/child", content=body(), headers={"Content-Type": "application/json"}
            )
            _refused(response, 413, "max_upload_bytes", "CLADE_MAX_UPLOAD_BYTES")
            assert response.request.headers.get("transfer-encoding") == "chunked"
            # The rest of the body was never read: the socket cannot carry another request.
            assert response.headers.get("connection") == "close"
            assert worker.get("/api/health").status_code == 200  # the service carries on
    finally:
        service.stop()


def test_scratch_space_left_by_a_killed_service_is_emptied_at_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    stale = [data / "tmp" / "clade-seed-abc123" / "agent", data / "tmp" / "clade-index-def456"]
    for folder in stale:
        folder.mkdir(parents=True)
        (folder / "leftover").write_bytes(b"x" * 1000)
    # The system temp folder made unusable: every scratch file must go under the data dir.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-system-tmp"))
    with app_service(service_env(data, f"sqlite:///{data / 'clade.db'}", free_port())) as service:
        assert (data / "tmp").is_dir() and list((data / "tmp").iterdir()) == []
        seed_id = import_seed(service, tmp_path)
        step_id = open_step_in(service.database_url, run_id=start_run(service, seed_id), parent_id=seed_id)
        with service.worker as worker:
            child = worker.post(f"/api/worker/steps/{step_id}/child", json={"patch": core_patch(3, "x")})
            assert child.status_code == 200, child.text
            for read in ("code", "export", "bundle", "patches"):
                assert worker.get(f"/api/agents/{child.json()['id']}/{read}").status_code == 200
        _assert_scratch_empty(service)
