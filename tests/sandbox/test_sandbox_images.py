"""Locally built images: content of the base image, caching, agent layers."""

from __future__ import annotations

import time
from contextlib import closing
from typing import Any

import pytest

from sandbox.base import ROLE_LABEL, Sandbox, SandboxSpec
from sandbox.docker_backend import DockerBackend
from sandbox.images.build import ensure_agent_image, ensure_base_image
from sandbox.images.wheels import InvalidRequirement
from tests.sandbox.conftest import run_ok

pytestmark = pytest.mark.docker


def test_base_image_layout(sandbox: Sandbox) -> None:
    assert run_ok(sandbox, "getent", "passwd", "clade").startswith("clade:x:1000:1000:")
    assert run_ok(sandbox, "sh", "-c", "echo $HOME") == "/tmp\n"
    listing = run_ok(sandbox, "ls", "/clade")
    assert listing.split() == ["agent", "bin", "llm", "out", "repo", "task"]
    assert run_ok(sandbox, "git", "--version").startswith("git version")
    assert "PID" in run_ok(sandbox, "ps")
    run_ok(sandbox, "python", "-c", "import venv, ssl, sqlite3")


def test_base_image_is_cached_by_its_inputs(docker_client: Any, base_image: str) -> None:
    started = time.monotonic()
    assert ensure_base_image(docker_client) == base_image
    assert time.monotonic() - started < 5
    assert base_image.startswith("clade/base:") and len(base_image.split(":")[1]) == 12
    labels = docker_client.images.get(base_image).labels
    assert labels[ROLE_LABEL] == "image"


def test_agent_image_without_extras_is_the_base(docker_client: Any, base_image: str) -> None:
    assert ensure_agent_image(docker_client, base_image, []) == base_image
    assert ensure_agent_image(docker_client, base_image, ["", "  "]) == base_image


def test_agent_image_adds_a_cached_layer(docker_client: Any, base_image: str, owner: str) -> None:
    tag = ensure_agent_image(docker_client, base_image, ["six", "iniconfig"])
    assert tag.startswith("clade/agent:")
    started = time.monotonic()
    assert ensure_agent_image(docker_client, base_image, [" iniconfig", "six ", "six"]) == tag
    assert time.monotonic() - started < 5
    backend = DockerBackend(docker_client, owner=owner)
    with closing(backend.start(_spec(tag))) as box:
        run_ok(box, "python", "-c", "import six, openai, pytest")
        assert run_ok(box, "id", "-u") == "1000\n"


def test_agent_requirements_cannot_reach_the_host(docker_client: Any, base_image: str) -> None:
    for bad in (["pkg @ file:///etc/shadow"], ["--extra-index-url=http://evil.example"]):
        with pytest.raises(InvalidRequirement):
            ensure_agent_image(docker_client, base_image, bad)


def _spec(image: str) -> SandboxSpec:
    return SandboxSpec(image=image, memory_mb=256, pids=64, tmpfs_mb=16)
