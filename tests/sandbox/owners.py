"""Sandbox owners as separate processes: a worker that starts a sandbox and keeps running,
then dies without closing it (as a SIGKILLed worker does).

    python -m tests.sandbox.owners --owner worker-x --image IMAGE

prints the sandbox's id, then waits until its stdin closes and exits without removing it.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from docker.errors import APIError, NotFound

from sandbox.base import BACKEND_LABEL, OWNER_LABEL, ROLE_LABEL, SandboxSpec
from sandbox.docker_backend import SANDBOX_ROLE
from sandbox.liveness import ProcessStamp, start_time
from sandbox.registry import get_backend

TEST_LABEL = "dev.clade.test-owners"
REMOVAL_DEADLINE_S = 120.0  # a busy engine


@dataclass
class OwnerProcess:
    """A live process owning one running sandbox."""

    process: subprocess.Popen[str]
    sandbox_id: str

    @property
    def pid(self) -> int:
        return self.process.pid

    def kill(self) -> None:
        """Dies as a SIGKILLed worker: its sandbox stays behind."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)


def start_owner(owner: str, image: str) -> OwnerProcess:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.sandbox.owners", "--owner", owner, "--image", image],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()  # the child exits (closing stdout) if it fails
    if not line:
        process.kill()
        raise AssertionError(f"the owner process exited with {process.wait(timeout=30)} before its sandbox")
    return OwnerProcess(process, line)


@contextmanager
def owner_processes(client: Any) -> Iterator[list[OwnerProcess]]:
    """A list to add `start_owner`s to; on exit, each is killed and its sandbox removed."""
    started: list[OwnerProcess] = []
    try:
        yield started
    finally:
        for owner in started:
            if owner.process.poll() is None:
                owner.kill()
            remove_sandbox(client, owner.sandbox_id)


def exists(client: Any, container_id: str) -> bool:
    try:
        client.api.inspect_container(container_id)
    except NotFound:
        return False
    return True


def remove_sandbox(client: Any, container_id: str) -> None:
    """Remove a test's container, gone when this returns, though a worker starting in another test
    may be removing it at the same moment (the engine then answers 409, "already in progress")."""
    try:
        client.api.remove_container(container_id, force=True)
    except NotFound:
        return
    except APIError as exc:
        if exc.status_code != 409:
            raise
    deadline = time.monotonic() + REMOVAL_DEADLINE_S
    while exists(client, container_id):
        assert time.monotonic() < deadline, (
            f"container {container_id} was still there after {REMOVAL_DEADLINE_S} s"
        )
        time.sleep(0.1)


def dead_stamp(base: ProcessStamp) -> ProcessStamp:
    """`base`'s host, boot and pid namespace, with the pid and start time of a process that has exited."""
    process = subprocess.Popen(["cat"], stdin=subprocess.PIPE)
    started = start_time(process.pid)
    assert started is not None
    process.communicate(timeout=30)  # closing stdin ends it; waiting reaps it
    return ProcessStamp(base.host, base.boot, base.pid_namespace, process.pid, started)


def create_stamped(client: Any, image: str, stamp: ProcessStamp | None, *, owner: str, tag: str) -> str:
    """A sandbox-labelled container (created, never started) carrying `stamp` (None: none, as
    before stamps existed), as a worker leaves one; `tag` finds it for clean-up."""
    labels = {
        OWNER_LABEL: owner,
        ROLE_LABEL: SANDBOX_ROLE,
        BACKEND_LABEL: "docker",
        TEST_LABEL: tag,
        **(stamp.labels() if stamp else {}),
    }
    created = client.api.create_container(image, command=["true"], labels=labels, network_disabled=True)
    return str(created["Id"])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--owner", required=True)
    parser.add_argument("--image", required=True)
    args = parser.parse_args()
    backend = get_backend("docker", owner=args.owner)
    box = backend.start(SandboxSpec(image=args.image, memory_mb=128, pids=32, tmpfs_mb=8))
    print(box.id, flush=True)
    sys.stdin.read()
    os._exit(0)  # no clean-up: the sandbox is left as a crashed worker leaves it


if __name__ == "__main__":
    sys.exit(main())
