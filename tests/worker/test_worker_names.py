"""Two `clade worker`s on one host without `--name` (what `clade demo` starts next to a worker
someone runs by hand): their names differ, and neither's start removes a live worker's sandbox."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from docker.errors import NotFound

from tests.sandbox.owners import OwnerProcess, owner_processes, start_owner

pytestmark = pytest.mark.docker
OWNER_LINE = re.compile(r"worker (worker-\S+): its sandboxes are labelled")


@pytest.fixture
def owners(docker_client: Any) -> Iterator[list[OwnerProcess]]:
    with owner_processes(docker_client) as started:
        yield started


def start_worker(data_dir: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """`clade worker` as `clade demo` starts it: no name, the embedded broker in its data dir."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLADE_")}
    env["CLADE_DATA_DIR"] = str(data_dir)
    data_dir.mkdir(parents=True)
    log = data_dir / "worker.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "worker", "--concurrency", "1"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return process, log


def wait_until_ready(process: subprocess.Popen[bytes], log: Path, timeout_s: float = 120) -> str:
    """The worker's owner label, once Celery says it is ready (its clean-up ran before)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        found = OWNER_LINE.search(text)
        if found and " ready." in text:
            return found.group(1)
        if process.poll() is not None:
            raise AssertionError(f"the worker exited with {process.returncode}:\n{text}")
        time.sleep(0.2)
    raise AssertionError(f"the worker was not ready within {timeout_s}s:\n{log.read_text(errors='replace')}")


def test_two_default_workers_on_one_host_differ_and_keep_live_sandboxes(
    docker_client: Any, base_image: str, tmp_path: Path, owners: list[OwnerProcess]
) -> None:
    tag = uuid.uuid4().hex[:8]
    live = start_owner(f"worker-live-{tag}", base_image)
    crashed = start_owner(f"worker-crashed-{tag}", base_image)
    owners.extend([live, crashed])
    crashed.kill()

    workers = [start_worker(tmp_path / name) for name in ("demo", "standalone")]
    try:
        names = [wait_until_ready(process, log) for process, log in workers]
    finally:
        for process, _log in workers:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process, _log in workers:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)

    host = socket.gethostname()
    assert names[0] != names[1]
    for name, (process, _log) in zip(names, workers, strict=True):
        assert name.startswith(f"worker-{host}-{process.pid}-")
    assert docker_client.api.inspect_container(live.sandbox_id)["State"]["Running"]
    with pytest.raises(NotFound):
        docker_client.api.inspect_container(crashed.sandbox_id)
