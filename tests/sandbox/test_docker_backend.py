"""What only the Docker backend promises: the container's configuration and engine errors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from docker.errors import NotFound

from sandbox.base import OWNER_LABEL, ROLE_LABEL, SandboxSpec, SandboxUnavailable
from sandbox.docker_backend import DockerBackend
from sandbox.registry import get_backend

pytestmark = pytest.mark.docker


@pytest.fixture
def docker_backend(docker_client: Any, owner: str) -> Iterator[DockerBackend]:
    backend = DockerBackend(docker_client, owner=owner)
    yield backend
    backend.remove_orphans(owner)


def small_spec(image: str, **overrides: Any) -> SandboxSpec:
    fields: dict[str, Any] = {"image": image, "memory_mb": 256, "cpus": 0.5, "pids": 100}
    return SandboxSpec(**(fields | {"tmpfs_mb": 32} | overrides))


def test_container_is_hardened_as_designed(
    docker_client: Any, docker_backend: DockerBackend, base_image: str, owner: str
) -> None:
    labels = {"dev.clade.step": "s-1", "purpose": "test"}
    with docker_backend.start(small_spec(base_image, labels=labels)) as box:
        attrs = docker_client.api.inspect_container(box.id)
    with pytest.raises(NotFound):  # leaving the block removed the container
        docker_client.api.inspect_container(box.id)
    host, config = attrs["HostConfig"], attrs["Config"]
    assert host["NetworkMode"] == "none"
    assert host["Memory"] == host["MemorySwap"] == 256 * 2**20
    assert host["NanoCpus"] == 500_000_000
    assert host["PidsLimit"] == 100
    assert host["ReadonlyRootfs"] is True
    assert "size=32m" in host["Tmpfs"]["/tmp"]
    assert host["CapDrop"] == ["ALL"] and not host["CapAdd"]
    assert host["SecurityOpt"] == ["no-new-privileges"]
    assert host["Privileged"] is False and host["Init"] is True
    assert config["User"] == "1000:1000"
    assert config["Labels"][OWNER_LABEL] == owner
    assert config["Labels"][ROLE_LABEL] == "sandbox"
    assert config["Labels"]["dev.clade.step"] == "s-1" and config["Labels"]["purpose"] == "test"


def test_tmpfs_size_is_enforced(docker_backend: DockerBackend, base_image: str) -> None:
    with docker_backend.start(small_spec(base_image, tmpfs_mb=8)) as box:
        fill = box.exec(["sh", "-c", "head -c 20000000 /dev/zero > /tmp/fill"], timeout_s=30)
        assert fill.exit_code != 0 and "No space left" in fill.stderr
        assert box.exec(["echo", "ok"], timeout_s=30).stdout == "ok\n"


def test_programs_in_tmp_run_only_with_tmpfs_exec(docker_backend: DockerBackend, base_image: str) -> None:
    script = "cp /bin/true /tmp/built && /tmp/built"
    with docker_backend.start(small_spec(base_image)) as box:
        denied = box.exec(["sh", "-c", script], timeout_s=30)
        assert denied.exit_code != 0 and "Permission denied" in denied.stderr
    with docker_backend.start(small_spec(base_image, tmpfs_exec=True, tmpfs_mb=8)) as box:
        assert box.exec(["sh", "-c", script], timeout_s=30).exit_code == 0
        fill = box.exec(["sh", "-c", "head -c 20000000 /dev/zero > /tmp/fill"], timeout_s=30)
        assert fill.exit_code != 0 and "No space left" in fill.stderr


def test_unreachable_engine_is_unavailable() -> None:
    with pytest.raises(SandboxUnavailable, match="unreachable"):
        DockerBackend(base_url="unix:///nonexistent/docker.sock")
    with pytest.raises(SandboxUnavailable):
        get_backend("docker", base_url="tcp://127.0.0.1:1", owner="nobody")
