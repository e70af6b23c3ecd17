"""Image builds that coexist on one engine, and failed builds that keep their log."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import docker
import pytest
from docker.errors import ImageNotFound

from sandbox.base import ROLE_LABEL, SandboxError
from sandbox.images.build import ensure_agent_image
from sandbox.images.layers import (
    BUILD_ROLE,
    BUILDER_LABEL,
    ImageConfig,
    build_log,
    builder_identity,
    commit_python_layer,
    is_stale_builder,
    remove_build_container,
    remove_stale_builds,
)
from sandbox.images.rootfs import RootfsRecipe, ensure_rootfs_tar

pytestmark = pytest.mark.docker

# Pinned so that only this test makes (and removes) these agent images.
CONCURRENT = (["iniconfig==2.0.0"], ["six==1.16.0"])


def _remove_image(client: Any, tag: str) -> None:
    with contextlib.suppress(ImageNotFound):
        client.images.remove(tag, force=True)


def test_two_builds_at_once_on_one_engine_both_succeed(
    docker_client: Any, base_image: str, tmp_path: Path
) -> None:
    # Each build has its own cache folder: the old per-cache lock let them overlap, and each
    # one's clean-up removed the other's build container.
    lines: dict[int, list[str]] = {i: [] for i in range(len(CONCURRENT))}
    results: dict[int, str] = {}

    def build(index: int) -> str:
        return ensure_agent_image(
            docker_client,
            base_image,
            CONCURRENT[index],
            tmp_path / f"cache-{index}",
            progress=lines[index].append,
        )

    try:
        with ThreadPoolExecutor(max_workers=len(CONCURRENT)) as pool:
            futures = {i: pool.submit(build, i) for i in range(len(CONCURRENT))}
            for index, future in futures.items():
                results[index] = future.result(timeout=600)  # re-raises a build's error
        for index, tag in results.items():
            assert tag.startswith("clade/agent:")
            assert f"committed {tag}" in lines[index]  # really built now, not found from before
            assert docker_client.images.get(tag).labels[ROLE_LABEL] == "image"
        assert len(set(results.values())) == len(CONCURRENT)
    finally:
        for tag in results.values():
            _remove_image(docker_client, tag)


def container_ids(client: Any) -> set[str]:
    """Ids of every container on the engine, in one call: listing them with the models API
    inspects each one, which fails when another process removes one meanwhile."""
    return {str(found["Id"]) for found in client.api.containers(all=True)}


def test_stale_build_cleanup_removes_only_dead_builders_of_this_host(
    docker_client: Any, base_image: str
) -> None:
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    dead_pid = int(finished.stdout)
    labels = {ROLE_LABEL: BUILD_ROLE}
    builders = {
        "live": builder_identity(),  # this process: a build in progress
        "dead": f"{builder_identity().split(':')[0]}:{dead_pid}:gone-long-ago",
        "foreign": f"another-host-{dead_pid}:{dead_pid}:123",  # another worker host's build
        "unlabelled": "",  # made by something else (a test fixture, an older Clade)
    }
    made = {
        name: docker_client.containers.create(
            base_image, command=["true"], network_mode="none", labels={**labels, BUILDER_LABEL: builder}
        )
        for name, builder in builders.items()
    }
    try:
        assert not is_stale_builder(builders["live"])
        assert is_stale_builder(builders["dead"])
        removed = remove_stale_builds(docker_client)
        assert made["dead"].id in removed
        assert not {made[name].id for name in ("live", "foreign", "unlabelled")} & set(removed)
        left = container_ids(docker_client)
        assert made["dead"].id not in left
        assert {made[name].id for name in ("live", "foreign", "unlabelled")} <= left
    finally:
        for container in made.values():
            if container.id in container_ids(docker_client):
                container.remove(force=True)


class _RemovesBeforeInspect:
    """The engine's API as another build's clean-up leaves it: `victim` is removed just after
    the listing and before its inspect, the interleaving two builds at once can meet."""

    def __init__(self, api: Any, victim: str) -> None:
        self._api = api
        self._victim = victim

    def inspect_container(self, container: str) -> Any:
        if container == self._victim:
            self._api.remove_container(container, force=True)
        return self._api.inspect_container(container)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._api, name)


def test_stale_build_cleanup_survives_a_container_removed_while_it_lists(
    docker_client: Any, base_image: str
) -> None:
    # Both belong to this live process, so no clean-up of a test running alongside touches them.
    labels = {ROLE_LABEL: BUILD_ROLE, BUILDER_LABEL: builder_identity()}
    made = [
        docker_client.containers.create(base_image, command=["true"], network_mode="none", labels=labels)
        for _ in range(2)
    ]
    racing = docker.from_env()
    racing.api = _RemovesBeforeInspect(docker_client.api, made[0].id)  # type: ignore[assignment]
    try:
        removed = remove_stale_builds(racing)
        assert not {c.id for c in made} & set(removed)
        left = container_ids(docker_client)
        assert made[0].id not in left and made[1].id in left  # a live build is left alone
    finally:
        racing.close()
        for container in made:
            if container.id in container_ids(docker_client):
                container.remove(force=True)


def test_a_failed_layer_build_keeps_its_log_and_names_it(
    docker_client: Any, base_image: str, tmp_path: Path
) -> None:
    empty = tmp_path / "wheels"
    empty.mkdir()
    log = tmp_path / "logs" / "failing.log"
    with pytest.raises(SandboxError) as failed, build_log(log):
        commit_python_layer(
            docker_client,
            from_image=base_image,
            wheels=empty,
            requirements=["six"],
            create_venv=False,
            config=ImageConfig(env={}, user="0:0", workdir="/"),
            tag="clade/never-built:test",
            progress=lambda _line: None,
        )
    assert f"full log: {log}" in str(failed.value)
    text = log.read_text()
    assert "--no-index" in text and "six" in text and "[exit 1]" in text
    # Its build container is gone (other processes may be building on this engine meanwhile).
    mine = {"label": [f"{ROLE_LABEL}={BUILD_ROLE}", f"{BUILDER_LABEL}={builder_identity()}"]}
    assert docker_client.containers.list(all=True, filters=mine) == []


def test_a_successful_build_log_is_not_left_behind(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "ok.log"
    with build_log(log):
        assert log.exists()
    assert not log.exists()


def test_a_failed_debootstrap_keeps_its_log(tmp_path: Path) -> None:
    recipe = RootfsRecipe(packages=("python3",))
    with pytest.raises(SandboxError) as failed:
        ensure_rootfs_tar(tmp_path, recipe, progress=lambda _line: None, mirror="file:///nonexistent-mirror")
    message = str(failed.value)
    assert "debootstrap failed" in message and "full log: " in message
    log = Path(message.split("full log: ", 1)[1].split("\n", 1)[0])
    assert log.is_file() and log.parent == tmp_path / "logs"
    assert "nonexistent-mirror" in log.read_text()
    assert not list((tmp_path / "rootfs").glob("rootfs-*"))  # the work folder is gone, the log is not


def test_removing_a_build_container_twice_at_once_is_no_error(docker_client: Any, base_image: str) -> None:
    # The second removal finds the container being removed (409) or gone (404): both are fine.
    container = docker_client.containers.create(
        base_image, command=["sleep", "infinity"], network_mode="none", labels={ROLE_LABEL: BUILD_ROLE}
    )
    container.start()
    handles = [docker_client.containers.get(container.id) for _ in range(3)]
    with ThreadPoolExecutor(max_workers=len(handles)) as pool:
        for future in [pool.submit(remove_build_container, handle) for handle in handles]:
            future.result(timeout=60)
    assert container.id not in container_ids(docker_client)
    remove_build_container(handles[0])  # long gone: still no error
