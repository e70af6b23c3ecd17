"""Start-up clean-up on a host shared by several workers: a sandbox is removed only once the
process that started it is gone, whatever its owner's name; a live worker's sandboxes stay."""

from __future__ import annotations

import os
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from sandbox.base import OWNER_LABEL
from sandbox.docker_backend import DockerBackend
from sandbox.liveness import ProcessStamp, start_time, this_process
from tests.sandbox.owners import (
    TEST_LABEL,
    OwnerProcess,
    create_stamped,
    dead_stamp,
    exists,
    owner_processes,
    remove_sandbox,
    start_owner,
)

pytestmark = pytest.mark.docker


def running(client: Any, container_id: str) -> bool:
    return exists(client, container_id) and bool(
        client.api.inspect_container(container_id)["State"]["Running"]
    )


@pytest.fixture
def owners(docker_client: Any) -> Iterator[list[OwnerProcess]]:
    with owner_processes(docker_client) as started:
        yield started


def test_a_live_workers_sandbox_survives_another_workers_start_and_not_its_death(
    docker_client: Any, base_image: str, owners: list[OwnerProcess]
) -> None:
    tag = uuid.uuid4().hex[:8]
    first = start_owner(f"worker-first-{tag}", base_image)
    owners.append(first)
    labels = docker_client.api.inspect_container(first.sandbox_id)["Config"]["Labels"]
    assert labels[OWNER_LABEL] == f"worker-first-{tag}"
    stamp = ProcessStamp.from_labels(labels)
    assert stamp is not None and stamp.pid == first.pid and stamp.host == socket.gethostname()

    # A second worker on this host starts: the first is alive, its running sandbox stays.
    second = DockerBackend(docker_client, owner=f"worker-second-{tag}")
    assert first.sandbox_id not in second.remove_abandoned()
    assert running(docker_client, first.sandbox_id)

    # The first worker dies without closing it: now it is an orphan, whoever starts next.
    first.kill()
    second.remove_abandoned()
    assert not exists(docker_client, first.sandbox_id)  # by us, or by another worker meanwhile


def test_a_worker_started_again_under_its_name_removes_only_its_dead_predecessors_sandbox(
    docker_client: Any, base_image: str, owners: list[OwnerProcess]
) -> None:
    name = f"worker-fixed-{uuid.uuid4().hex[:8]}"
    predecessor = start_owner(name, base_image)
    twin = start_owner(name, base_image)  # misconfigured: a live worker of the same name
    owners.extend([predecessor, twin])
    predecessor.kill()
    DockerBackend(docker_client, owner=name).remove_abandoned()
    assert not exists(docker_client, predecessor.sandbox_id)
    assert running(docker_client, twin.sandbox_id)


def test_stamps_are_judged_only_where_their_process_can_be_seen(docker_client: Any, base_image: str) -> None:
    me = this_process()
    dead = dead_stamp(me)
    tag = uuid.uuid4().hex[:8]
    judge, other = f"worker-judge-{tag}", f"worker-other-{tag}"
    elsewhere = replace(dead, host=f"elsewhere-{tag}", boot="1" * 32)
    cases: dict[str, tuple[ProcessStamp | None, str]] = {
        "dead": (dead, other),
        "pid reused": (replace(me, start=str(int(me.start) + 1)), other),
        "earlier boot of this host": (replace(dead, boot="0" * 32, pid=me.pid, start=me.start), other),
        "alive": (me, other),
        "another host": (elsewhere, other),
        "another pid namespace": (replace(dead, pid_namespace="1"), other),
        "not stamped": (None, other),
        # The judge's own name, out of its sight: a previous process of the same name left them.
        "mine, another pid namespace": (replace(dead, pid_namespace="1"), judge),
        "mine, another host": (elsewhere, judge),
        "mine, not stamped": (None, judge),
        "mine, alive": (me, judge),  # a live twin of the same name (misconfigured): kept
    }
    ids = {
        what: create_stamped(docker_client, base_image, stamp, owner=owner, tag=tag)
        for what, (stamp, owner) in cases.items()
    }
    try:
        removed = DockerBackend(docker_client, owner=judge).remove_abandoned()
        gone = {"dead", "pid reused", "earlier boot of this host"} | {w for w in ids if w.startswith("mine,")}
        gone.discard("mine, alive")
        assert set(removed) & set(ids.values()) <= {ids[what] for what in gone}
        # Another worker starting meanwhile may have removed some of them first.
        assert {what for what, cid in ids.items() if not exists(docker_client, cid)} == gone
    finally:
        for cid in ids.values():
            remove_sandbox(docker_client, cid)
    assert docker_client.api.containers(all=True, filters={"label": f"{TEST_LABEL}={tag}"}) == []


def test_start_time_names_one_process() -> None:
    me = this_process()
    assert me.pid == os.getpid() and me.start == start_time(os.getpid())
    assert me.boot and me.pid_namespace
    assert not me.is_gone(seen_from=me)
    dead = dead_stamp(me)
    assert start_time(dead.pid) != dead.start
    assert dead.is_gone(seen_from=me)
    # A worker killed but not yet reaped by its parent (a zombie) is gone too.
    zombie = subprocess.Popen(["cat"], stdin=subprocess.PIPE)
    try:
        zombie.kill()
        deadline = time.monotonic() + 30
        while start_time(zombie.pid) is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert start_time(zombie.pid) is None
        assert os.path.exists(f"/proc/{zombie.pid}")  # not reaped: still a zombie
    finally:
        zombie.wait(timeout=30)
    # A process with its stamp partly unknown (no /proc) is never judged gone.
    assert not replace(dead, start="").is_gone(seen_from=me)
    assert not dead.is_gone(seen_from=replace(me, boot=""))
