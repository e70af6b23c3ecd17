"""The contract every sandbox backend keeps, run against each registered backend."""

from __future__ import annotations

import os
from contextlib import closing
from pathlib import Path

import pytest

from sandbox.base import (
    Mount,
    Sandbox,
    SandboxBackend,
    SandboxError,
    SandboxFileError,
    SandboxUnavailable,
)
from tests.sandbox.conftest import SpecFactory, run_ok

pytestmark = pytest.mark.docker


def test_exec_returns_output_and_exit_code(sandbox: Sandbox) -> None:
    result = sandbox.exec(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout_s=30)
    assert (result.exit_code, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert not result.timed_out and not result.output_truncated
    assert 0 < result.duration_s < 30


def test_failed_command_is_a_result(sandbox: Sandbox) -> None:
    assert sandbox.exec(["false"], timeout_s=30).exit_code == 1
    missing = sandbox.exec(["no-such-program"], timeout_s=30)
    assert missing.exit_code != 0
    assert "no-such-program" in missing.stdout + missing.stderr


def test_exec_env_and_cwd(sandbox: Sandbox) -> None:
    result = sandbox.exec(
        ["sh", "-c", 'echo "$GREETING"; pwd'], timeout_s=30, env={"GREETING": "hi"}, cwd="/tmp"
    )
    assert result.stdout == "hi\n/tmp\n"


def test_default_workdir_is_the_specs(backend: SandboxBackend, make_spec: SpecFactory) -> None:
    with closing(backend.start(make_spec(workdir="/clade"))) as box:
        assert run_ok(box, "pwd") == "/clade\n"


def test_python_and_base_requirements(sandbox: Sandbox) -> None:
    for python in ("python", "python3"):
        out = run_ok(sandbox, python, "-c", "import openai, httpx, pytest, sys; print(sys.prefix)")
        assert out.strip() == "/opt/clade-venv"


def test_write_then_read_binary_file(sandbox: Sandbox) -> None:
    data = bytes(range(256)) * 1000
    sandbox.write_file("/tmp/new/dir/blob.bin", data)
    assert sandbox.read_file("/tmp/new/dir/blob.bin") == data
    assert run_ok(sandbox, "stat", "-c", "%u", "/tmp/new/dir/blob.bin") == "1000\n"


def test_write_empty_file_and_overwrite(sandbox: Sandbox) -> None:
    sandbox.write_file("/tmp/f.txt", b"first version, longer")
    sandbox.write_file("/tmp/f.txt", b"")
    assert sandbox.read_file("/tmp/f.txt") == b""


def test_read_file_errors(sandbox: Sandbox) -> None:
    with pytest.raises(SandboxFileError, match="No such file"):
        sandbox.read_file("/tmp/missing")
    sandbox.write_file("/tmp/big", b"x" * 2000)
    assert sandbox.read_file("/tmp/big", max_bytes=2000) == b"x" * 2000
    with pytest.raises(SandboxFileError, match="larger than"):
        sandbox.read_file("/tmp/big", max_bytes=1999)


def test_write_file_refused_is_a_file_error(sandbox: Sandbox) -> None:
    with pytest.raises(SandboxFileError, match="Read-only"):
        sandbox.write_file("/etc/evil", b"x")
    with pytest.raises(OSError):  # SandboxFileError is also an OSError
        sandbox.write_file("/usr/evil", b"x")


def test_bind_mounts_honour_read_only(
    backend: SandboxBackend, make_spec: SpecFactory, tmp_path: Path
) -> None:
    ro, rw = tmp_path / "ro", tmp_path / "rw"
    ro.mkdir()
    rw.mkdir()
    (ro / "given.txt").write_text("from host")
    os.chmod(rw, 0o777)  # the sandbox user is uid 1000, the test may be root
    spec = make_spec(
        mounts=[
            Mount(source=ro, target="/clade/agent", read_only=True),
            Mount(source=rw, target="/clade/out", read_only=False),
        ]
    )
    box = backend.start(spec)
    try:
        assert run_ok(box, "cat", "/clade/agent/given.txt") == "from host"
        denied = box.exec(["sh", "-c", "echo x > /clade/agent/new.txt"], timeout_s=30)
        assert denied.exit_code != 0 and "Read-only" in denied.stderr
        with pytest.raises(SandboxFileError):
            box.write_file("/clade/agent/given.txt", b"overwritten")
        run_ok(box, "sh", "-c", "echo written > /clade/out/result.txt")
        box.write_file("/clade/out/nested/file.bin", b"\x00\x01")
    finally:
        box.close()
    assert (ro / "given.txt").read_text() == "from host"
    assert not (ro / "new.txt").exists()
    assert (rw / "result.txt").read_text() == "written\n"
    assert (rw / "nested" / "file.bin").read_bytes() == b"\x00\x01"


def test_env_holds_only_what_the_spec_gives(
    backend: SandboxBackend, make_spec: SpecFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLADE_TEST_HOST_SECRET", "sk-host-secret-value")
    box = backend.start(make_spec(env={"OPENAI_API_KEY": "clade-sandbox", "CLADE_MODEL": "m"}))
    try:
        listing = run_ok(box, "env")
        pid1 = box.read_file("/proc/1/environ").decode(errors="replace")
    finally:
        box.close()
    env = dict(line.split("=", 1) for line in listing.splitlines())
    assert env["OPENAI_API_KEY"] == "clade-sandbox" and env["CLADE_MODEL"] == "m"
    # Besides the spec: the image's own defaults and what every container gets.
    assert set(env) - {"OPENAI_API_KEY", "CLADE_MODEL"} <= {"PATH", "HOME", "LANG", "HOSTNAME"}
    for text in (listing, pid1):
        assert "sk-host-secret-value" not in text
        assert "CLADE_TEST_HOST_SECRET" not in text


def test_close_removes_the_sandbox_and_is_idempotent(
    backend: SandboxBackend, make_spec: SpecFactory, owner: str
) -> None:
    box = backend.start(make_spec())
    run_ok(box, "true")
    box.close()
    box.close()
    assert backend.remove_orphans(owner) == []
    with pytest.raises(SandboxError):
        box.exec(["true"], timeout_s=5)


def test_close_on_exit_of_a_with_block(backend: SandboxBackend, make_spec: SpecFactory, owner: str) -> None:
    with closing(backend.start(make_spec())) as box:
        run_ok(box, "true")
    assert backend.remove_orphans(owner) == []


def test_orphans_are_found_by_owner_and_removed(
    backend_name: str, make_spec: SpecFactory, owner: str
) -> None:
    from sandbox.registry import get_backend

    crashed_worker = get_backend(backend_name, owner=owner)
    other_worker = get_backend(backend_name, owner=owner + "-other")
    lost = crashed_worker.start(make_spec())
    kept = other_worker.start(make_spec())
    try:
        restarted_worker = get_backend(backend_name, owner=owner)
        assert restarted_worker.remove_orphans(owner) == [lost.id]
        assert restarted_worker.remove_orphans(owner) == []
        with pytest.raises(SandboxError):
            lost.exec(["true"], timeout_s=5)
        assert run_ok(kept, "echo", "untouched") == "untouched\n"
    finally:
        kept.close()
        lost.close()


def test_missing_image_is_unavailable(backend: SandboxBackend, make_spec: SpecFactory) -> None:
    with pytest.raises(SandboxUnavailable, match="not found"):
        backend.start(make_spec(image="clade/does-not-exist:nothing"))
