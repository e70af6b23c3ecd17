"""A sandbox whose read-write mounts grow past its write limit has every process killed, says
so in the command's stderr, and goes on running commands; read-only mounts and the sandbox's
own tmpfs are not counted."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from sandbox.base import Mount
from sandbox.docker_backend import DockerBackend
from sandbox.ownership import make_world_writable
from tests.sandbox.conftest import SpecFactory, run_ok

LIMIT_MB = 16
NOTE = f"clade: every process was killed: the sandbox wrote more than {LIMIT_MB} MiB to its folders"


def test_writes_past_the_limit_kill_the_writer(
    docker_client: Any, owner: str, make_spec: SpecFactory, tmp_path: Path
) -> None:
    folder = tmp_path / "rw"
    folder.mkdir()
    make_world_writable(folder)
    backend = DockerBackend(docker_client, owner=owner, writable_limit_mb=LIMIT_MB)
    spec = make_spec(mounts=[Mount(source=folder, target="/data", read_only=False)])
    # Writes 1 MiB at a time for at most 20 minutes: only the kill ends it early.
    writer = (
        "i=0; while [ $i -lt 1200 ]; do"
        " head -c 1048576 /dev/urandom >> /data/fill.bin; sleep 1; i=$((i+1)); done"
    )
    try:
        with backend.start(spec) as box:
            small = box.exec(["sh", "-c", "head -c 8M /dev/urandom > /tmp/scratch.bin"], timeout_s=60)
            assert small.exit_code == 0 and NOTE not in small.stderr  # its tmpfs is not counted
            flood = box.exec(
                ["sh", "-c", f"head -c {4 * LIMIT_MB}M /dev/urandom > /data/big.bin; {writer}"],
                timeout_s=1200,
            )
            assert flood.exit_code != 0 and not flood.timed_out
            assert NOTE in flood.stderr
            assert box.writes_exceeded
            assert (folder / "big.bin").stat().st_size >= LIMIT_MB * 1024 * 1024
            # While the folder stays over its limit every command is killed; once the files are
            # gone the same sandbox runs commands again (a kill already on its way may land once).
            for path in folder.iterdir():
                path.unlink()
            deadline = time.monotonic() + 60
            while (echo := box.exec(["echo", "still-alive"], timeout_s=30)).stdout != "still-alive\n":
                assert time.monotonic() < deadline, echo
    finally:
        backend.remove_orphans(owner)


def test_a_spec_can_opt_out_and_read_only_mounts_are_not_watched(
    docker_client: Any, owner: str, make_spec: SpecFactory, tmp_path: Path
) -> None:
    folder = tmp_path / "rw"
    folder.mkdir()
    make_world_writable(folder)
    backend = DockerBackend(docker_client, owner=owner, writable_limit_mb=LIMIT_MB)
    try:
        opted_out = make_spec(
            mounts=[Mount(source=folder, target="/data", read_only=False)], writable_limit_mb=0
        )
        with backend.start(opted_out) as box:
            result = box.exec(
                ["sh", "-c", f"head -c {2 * LIMIT_MB}M /dev/urandom > /data/big.bin"], timeout_s=60
            )
            assert result.exit_code == 0 and not box.writes_exceeded
        read_only = make_spec(mounts=[Mount(source=folder, target="/data", read_only=True)])
        with backend.start(read_only) as box:
            assert run_ok(box, "cat", "/proc/self/status") and not box.writes_exceeded
    finally:
        backend.remove_orphans(owner)
