"""Validation of a child before it is scored: it compiles, it still starts, its own tests pass.

`agent.toml` may name a `check` command (a quick start-up self-test) and a
`test` command (the agent's own tests); both run in a sandbox with no model.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from contextlib import closing
from pathlib import Path

from contracts.config import LimitsConfig
from contracts.errors import InvalidAgentError, PatchError
from contracts.manifest import MANIFEST_FILE, AgentManifest, parse_manifest
from sandbox.base import Mount, SandboxError, SandboxSpec
from sandbox.disk import LimitedDisk, MiB, owned_prefix
from sandbox.hostfiles import NotARegularFile, open_regular_file
from sandbox.ownership import give_to_sandbox_user
from worker.context import WorkerContext
from worker.workspace import GIT_SAFE, init_repo, unpack

TAIL = 2_000
MAX_MANIFEST_BYTES = 1_000_000


def validate_child(ctx: WorkerContext, parent_code: bytes, patch: str, limits: LimitsConfig) -> str | None:
    """None if the child is sound, else the reason it is rejected."""
    with tempfile.TemporaryDirectory(prefix=owned_prefix("validate"), dir=_ensure(ctx.work_dir)) as tmp:
        code = Path(tmp) / "agent"
        code.mkdir()
        unpack(parent_code, code)
        init_repo(code, "parent")
        applied = subprocess.run(
            ["git", *GIT_SAFE, "apply", "--whitespace=nowarn", "-"],
            cwd=code,
            input=patch.encode(),
            capture_output=True,
        )
        if applied.returncode != 0:
            raise PatchError(f"the improver's patch does not apply: {applied.stderr.decode()[:TAIL]}")
        shutil.rmtree(code / ".git")
        try:
            manifest = parse_manifest(_manifest_bytes(code))
        except InvalidAgentError as exc:
            return f"the child does not start: {exc}"
        settings = ctx.settings
        with LimitedDisk.around(
            code, Path(tmp) / "disk", settings.sandbox_disk_mb * MiB, settings.sandbox_disk_enforcement
        ) as disk:
            give_to_sandbox_user(disk.path)
            return _run_commands(ctx, disk, manifest, limits)


def _run_commands(
    ctx: WorkerContext, disk: LimitedDisk, manifest: AgentManifest, limits: LimitsConfig
) -> str | None:
    """Compile, check and test the child on its size-limited folder; the first failure's reason."""
    code = disk.path
    commands = [("compile", "python -m compileall -q /clade/agent")]
    for name, command in (("check", manifest.check), ("test", manifest.test)):
        if command and command.strip():
            commands.append((name, command))
    spec = SandboxSpec(
        image=ctx.images.for_agent(manifest.requirements),
        mounts=[Mount(source=code, target="/clade/agent", read_only=False)],
        env={"HOME": "/tmp", "PYTHONPATH": "/clade/agent", "PYTHONDONTWRITEBYTECODE": "1"},
        workdir="/clade/agent",
        memory_mb=limits.memory_mb,
        cpus=limits.cpus,
        pids=limits.pids,
        writable_limit_mb=0,  # its folder is a LimitedDisk
        labels={"dev.clade.purpose": "validate"},
    )
    with closing(ctx.backend.start(spec)) as sandbox:
        disk.start(on_exceeded=sandbox.close)
        try:
            for name, command in commands:
                try:
                    result = sandbox.exec(
                        ["sh", "-c", command], timeout_s=limits.test_timeout_s, cwd="/clade/agent"
                    )
                except SandboxError:
                    if not disk.exceeded:
                        raise
                if disk.exceeded:
                    limit_mb = disk.limit_bytes // MiB
                    return f"the child's {name} command ({command}) wrote more than {limit_mb} MiB"
                if result.timed_out or result.exit_code != 0:
                    what = "timed out" if result.timed_out else f"exited with {result.exit_code}"
                    output = (result.stdout + result.stderr)[-TAIL:]
                    return f"the child's {name} command ({command}) {what}: {output}"
        finally:
            disk.stop_watching()
    return None


def _manifest_bytes(code: Path) -> bytes | None:
    """The child's agent.toml, None if it has none; a link (the patch may make one, to any host
    file), FIFO or device is refused, never read."""
    try:
        fd = open_regular_file(code / MANIFEST_FILE)
    except FileNotFoundError:
        return None
    except NotARegularFile as exc:
        raise InvalidAgentError(f"{exc}; it is not read") from exc
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_MANIFEST_BYTES + 1)
    if len(data) > MAX_MANIFEST_BYTES:
        raise InvalidAgentError(f"{MANIFEST_FILE} is larger than {MAX_MANIFEST_BYTES} bytes")
    return data


def _ensure(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder
