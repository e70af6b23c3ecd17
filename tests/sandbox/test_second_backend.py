"""The sandbox seam holds: a second backend, installed as a package outside Clade (an entry
point in `clade.sandbox_backends`, written by this test), serves the worker's images, the
polyglot toolchain check, SWE-bench's repository copy and `clade images build`, and no
Docker engine is asked meanwhile.

DOCKER_HOST points at a unix socket this test listens on: a process that tried Docker would
connect to it, and the test sees no connection. The backend (`plugin/`) keeps images as host
folders and runs commands as host subprocesses, so it registers as not isolating: Clade
refuses it unless told that this is meant.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks import BrokenTask, find_task
from benchmarks.polyglot import Polyglot, ToolchainMissing
from benchmarks.polyglot.image import polyglot_image_tag
from benchmarks.swebench.testbed import export_repo
from sandbox.registry import (
    ENTRY_POINT_GROUP,
    UnknownBackend,
    UnsafeBackend,
    backend_entry,
    backend_names,
    get_backend,
)
from worker.context import ImageProvider

PLUGIN = Path(__file__).parent / "plugin" / "clade_recording_backend.py"
TOOLCHAINS = Path(__file__).parents[1] / "benchmarks" / "polyglot" / "toolchains"
REPO = Path(__file__).parents[2]


def install_plugin(site: Path) -> None:
    """The backend as an installed distribution: its module and its entry point."""
    site.mkdir(parents=True)
    shutil.copy(PLUGIN, site / PLUGIN.name)
    info = site / "clade_recording_backend-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: clade-recording-backend\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\nrecording = clade_recording_backend:BACKEND\n"
        # Mistakes a package can make: a module that is not there, an object that is no entry;
        # and a name Clade's own backend has, which a package cannot take over.
        "missing = clade_no_such_module:BACKEND\n"
        "bare = clade_recording_backend:RecordingBackend\n"
        "docker = clade_recording_backend:BACKEND\n"
    )


@pytest.fixture
def no_docker(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    """A unix socket nothing should connect to, and the DOCKER_HOST naming it."""
    path = tmp_path / "docker.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(8)
    listener.setblocking(False)
    yield listener, f"unix://{path}"
    listener.close()


def connections(listener: socket.socket) -> int:
    """How many connections the listener has had (each accepted and closed)."""
    count = 0
    while True:
        try:
            accepted, _ = listener.accept()
        except BlockingIOError:
            return count
        accepted.close()
        count += 1


@pytest.fixture
def recording(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_docker: tuple[socket.socket, str]
) -> Iterator[Path]:
    """The plugin installed on this process's path, its root folder (images, calls.jsonl)."""
    site = tmp_path / "site"
    install_plugin(site)
    root = tmp_path / "recording"
    root.mkdir()
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("RECORDING_ROOT", str(root))
    monkeypatch.setenv("DOCKER_HOST", no_docker[1])
    yield root
    sys.modules.pop("clade_recording_backend", None)


def calls(root: Path, *names: str) -> list[dict[str, Any]]:
    path = root / "calls.jsonl"
    recorded = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [call for call in recorded if not names or call["call"] in names]


def make_image(root: Path, image: str, tools: list[str]) -> Path:
    """An image of the recording backend that "has" `tools` (scripts in its bin/)."""
    folder = root / "images" / image.replace("/", "_").replace(":", "_")
    (folder / "bin").mkdir(parents=True)
    for tool in tools:
        script = folder / "bin" / tool
        script.write_text("#!/bin/sh\nexit 0\n")
        script.chmod(0o755)
    return folder


def test_a_backend_without_isolation_needs_the_explicit_flag(recording: Path) -> None:
    assert "recording" in backend_names() and "docker" in backend_names()
    unsafe = r"'recording' does not isolate .* CLADE_SANDBOX_ALLOW_UNSAFE=true"
    with pytest.raises(UnsafeBackend, match=unsafe):
        get_backend("recording", owner="t")
    assert calls(recording) == []  # refused before it was made
    get_backend("recording", allow_unsafe=True, owner="t")
    assert calls(recording, "backend") == [{"call": "backend", "owner": "t", "options": []}]


def test_a_broken_registration_is_a_clear_error(recording: Path) -> None:
    with pytest.raises(UnknownBackend, match=r"'missing' \(clade_no_such_module:BACKEND\) cannot be loaded"):
        get_backend("missing", owner="t")
    with pytest.raises(UnknownBackend, match=r"'bare' .* is not a sandbox.registry.BackendEntry but type"):
        get_backend("bare", owner="t")
    with pytest.raises(
        UnknownBackend, match=r"unknown sandbox backend 'nope'; known: bare, docker, missing, recording"
    ):
        get_backend("nope", owner="t")
    assert backend_entry("docker").isolated  # Clade's own, not the package's
    assert calls(recording) == []


def test_benchmarks_and_the_worker_get_images_and_sandboxes_from_the_backend(
    recording: Path, no_docker: tuple[socket.socket, str], tmp_path: Path
) -> None:
    backend = get_backend("recording", allow_unsafe=True, owner="seam")
    toolchain = polyglot_image_tag()

    # The toolchain check asks this backend: first for the image, which it does not have.
    polyglot = Polyglot(root=TOOLCHAINS, languages=["go", "rust"])  # loads without asking anyone
    assert calls(recording, "exists", "start") == []
    go = find_task(polyglot, "polyglot__go__digit-sum")
    rust = find_task(polyglot, "polyglot__rust__digit-sum")
    absent = (
        r"cannot run go exercises: the image .* build it there "
        r"with `clade images build --benchmark polyglot`"
    )
    with pytest.raises(ToolchainMissing, match=absent):
        polyglot.check_environment(go, backend)
    assert calls(recording, "exists") == [{"call": "exists", "image": toolchain}]

    # Then the image is there with go only: one probe sandbox, run and closed, answers for both.
    make_image(recording, toolchain, ["go"])
    polyglot.check_environment(go, backend)
    with pytest.raises(ToolchainMissing, match=r"rust needs `cargo`"):
        polyglot.check_environment(rust, backend)
    started = calls(recording, "start")
    assert [(call["image"], call["network"]) for call in started] == [(toolchain, "none")]
    probe = calls(recording, "exec")
    assert len(probe) == 1 and probe[0]["command"][:2] == ["sh", "-c"] and "go" in probe[0]["command"]
    assert calls(recording, "close") == [{"call": "close", "sandbox": started[0]["sandbox"]}]

    # The worker's images: a task's own image as it is, the agent runtime, both from the store.
    images = ImageProvider(backend.images)
    assert images.for_task(go, ["six"]) == toolchain
    assert images.runtime(["six"]) == recording / "runtime"
    assert [c["call"] for c in calls(recording, "for_task", "for_agent", "runtime")] == [
        "for_task",
        "for_agent",
        "runtime",
    ]

    # SWE-bench's repository copy goes through `copy_out`; an absent folder is a broken task.
    testbed = make_image(recording, "sweb/instance:1", []) / "testbed"
    testbed.mkdir()
    (testbed / "setup.py").write_text("print('hi')\n")
    copied = export_repo(backend.images, "sweb/instance:1", "/testbed", tmp_path / "export")
    assert (copied / "setup.py").read_text() == "print('hi')\n"
    with pytest.raises(BrokenTask, match="sweb/instance:1 has no /nowhere"):
        export_repo(backend.images, "sweb/instance:1", "/nowhere", tmp_path / "export2")
    assert [c["source"] for c in calls(recording, "copy_out")] == ["/testbed", "/nowhere"]

    assert connections(no_docker[0]) == 0


def test_clade_images_build_goes_through_the_configured_backend(
    recording: Path, no_docker: tuple[socket.socket, str], tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), str(tmp_path / "site")]),
        "CLADE_SANDBOX_BACKEND": "recording",
        "CLADE_DATA_DIR": str(tmp_path / "data"),
    }
    command = [sys.executable, "-m", "cli.main", "images", "build", "--benchmark", "polyglot"]
    refused = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert refused.returncode != 0 and "CLADE_SANDBOX_ALLOW_UNSAFE=true" in refused.stderr + refused.stdout
    built = subprocess.run(
        command,
        env={**env, "CLADE_SANDBOX_ALLOW_UNSAFE": "true"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    assert f"polyglot image ready: {polyglot_image_tag()}" in built.stdout
    assert [c["call"] for c in calls(recording, "base", "runtime", "build")] == ["base", "runtime", "build"]
    assert calls(recording, "build")[0]["tag"] == polyglot_image_tag()
    assert connections(no_docker[0]) == 0
