"""Task images and the wheels for a Python other than the host's.

A task image is used as it is when the engine has it, and pulled otherwise; here no
registry is reachable, so the pull fails with an error that names the image and says
how to get it. Wheels are resolved for the target interpreter, so dependencies behind
markers of an older Python (`exceptiongroup; python_version < "3.11"`) are there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sandbox.base import SandboxUnavailable
from sandbox.images.build import ensure_task_image
from sandbox.images.pull import PullError, PullFailed, follow_pull, split_name
from sandbox.images.wheels import WheelTarget, ensure_wheels
from tests.helpers import CLOSED_REGISTRY


def test_image_names_split_into_repository_and_tag() -> None:
    assert split_name("swebench/sweb.eval.x86_64.a__b-1:latest") == (
        "swebench/sweb.eval.x86_64.a__b-1",
        "latest",
    )
    assert split_name("sweb.eval.x86_64.a__b-1") == ("sweb.eval.x86_64.a__b-1", "latest")
    assert split_name("registry.local:5000/team/image") == ("registry.local:5000/team/image", "latest")
    assert split_name("registry.local:5000/team/image:v2") == ("registry.local:5000/team/image", "v2")


def test_pull_progress_sums_the_layers_and_stops_at_an_error() -> None:
    mb = 1024 * 1024
    events = [
        {"status": "Pulling from swebench/x", "id": "latest"},
        {"status": "Pulling fs layer", "id": "a"},
        {"status": "Downloading", "id": "a", "progressDetail": {"current": 1 * mb, "total": 10 * mb}},
        {"status": "Downloading", "id": "b", "progressDetail": {"current": 5 * mb, "total": 10 * mb}},
        {"status": "Download complete", "id": "a"},
        {"status": "Download complete", "id": "b"},
        {"status": "Pull complete", "id": "b"},
    ]
    lines: list[str] = []
    follow_pull("swebench/x:latest", events, lines.append)
    assert lines == [
        "swebench/x:latest: 1/10 MB of 1 layer(s)",
        "swebench/x:latest: 6/20 MB of 2 layer(s)",
        "swebench/x:latest: 15/20 MB of 2 layer(s)",
        "swebench/x:latest: 20/20 MB of 2 layer(s)",
    ]
    with pytest.raises(PullError, match="manifest unknown"):
        follow_pull("swebench/x:latest", [*events[:3], {"error": "manifest unknown"}], lines.append)


@pytest.mark.docker
def test_a_local_task_image_is_used_as_it_is(docker_client: Any, base_image: str) -> None:
    lines: list[str] = []
    assert ensure_task_image(docker_client, base_image, progress=lines.append) == base_image
    assert lines == []  # nothing pulled, nothing built


@pytest.mark.docker
def test_an_absent_task_image_that_cannot_be_pulled_is_a_clear_error(docker_client: Any) -> None:
    # A registry on a closed loopback port: the pull fails at once and nothing leaves this machine.
    name = f"{CLOSED_REGISTRY}/swebench/sweb.eval.x86_64.clade-absent__image-1:latest"
    lines: list[str] = []
    with pytest.raises(PullFailed) as caught:
        ensure_task_image(docker_client, name, progress=lines.append)
    assert isinstance(caught.value, SandboxUnavailable)
    message = str(caught.value)
    assert name in message and "could not be pulled" in message
    assert "docker load" in message and "build it" in message
    assert lines == [f"{name}: not on this engine; pulling"]


def test_wheels_for_python_3_9_include_its_marker_dependencies(tmp_path: Path) -> None:
    lines: list[str] = []
    target = WheelTarget(python_version="3.9", glibc_minor=31)
    wheels = ensure_wheels(["pytest"], tmp_path, target=target, progress=lines.append)
    names = {path.name.split("-")[0].lower() for path in wheels.glob("*.whl")}
    # Needed by pytest on Python < 3.11 only: a resolver evaluating the host's 3.11 drops them.
    assert {"pytest", "exceptiongroup", "tomli", "iniconfig", "pluggy", "packaging"} <= names
    assert ensure_wheels(["pytest"], tmp_path, target=target, progress=lines.append) == wheels
    assert lines[-1] == f"reusing cached wheels {wheels}"
