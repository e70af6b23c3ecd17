"""A sandbox never gets more of the host than the worker's ceiling, whatever its spec asks."""

from __future__ import annotations

import os
from typing import Any

from sandbox.ceiling import MEMORY_RESERVE_MB, ResourceCeiling, host_memory_mb
from sandbox.docker_backend import DockerBackend
from tests.sandbox.conftest import SpecFactory, run_ok


def host_limits(docker_client: Any, container_id: str) -> tuple[int, int, int]:
    host = docker_client.api.inspect_container(container_id)["HostConfig"]
    return host["Memory"], host["NanoCpus"], host["PidsLimit"]


def test_asks_above_the_ceiling_are_lowered_to_it(
    docker_client: Any, owner: str, make_spec: SpecFactory
) -> None:
    """As the engine enforces them (the container's cgroup limits)."""
    ceiling = ResourceCeiling(memory_mb=192, cpus=0.5, pids=48)
    backend = DockerBackend(docker_client, owner=owner, ceiling=ceiling)
    try:
        with backend.start(make_spec(memory_mb=256 * 1024, cpus=64.0, pids=65536)) as box:
            assert run_ok(box, "echo", "started") == "started\n"
            limits = host_limits(docker_client, box.id)
    finally:
        backend.remove_orphans(owner)
    assert limits == (192 * 1024 * 1024, 500_000_000, 48)


def test_asks_within_the_ceiling_are_kept(docker_client: Any, owner: str, make_spec: SpecFactory) -> None:
    backend = DockerBackend(
        docker_client, owner=owner, ceiling=ResourceCeiling(memory_mb=4096, cpus=2, pids=512)
    )
    try:
        with backend.start(make_spec(memory_mb=256, cpus=1.0, pids=128)) as box:
            limits = host_limits(docker_client, box.id)
    finally:
        backend.remove_orphans(owner)
    assert limits == (256 * 1024 * 1024, 1_000_000_000, 128)


def test_the_default_ceiling_is_this_hosts_memory_less_a_reserve_and_its_cpus() -> None:
    ceiling = ResourceCeiling.for_host()
    total = host_memory_mb()
    assert ceiling.memory_mb == max(total - MEMORY_RESERVE_MB, total // 4)
    assert ceiling.cpus == os.cpu_count()
    assert ResourceCeiling.for_host(memory_mb=1000, cpus=1.5, pids=99) == ResourceCeiling(
        memory_mb=1000, cpus=1.5, pids=99
    )
