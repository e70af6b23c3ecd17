"""Validation of a child before it is scored: it compiles, it still starts, its own tests pass.

`agent.toml` may name a `check` command (a quick start-up self-test) and a
`test` command (the agent's own tests); both run in a sandbox with no model.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from contextlib import closing
from pathlib import Path

from contracts.config import LimitsConfig
from contracts.errors import InvalidAgentError, PatchError
from contracts.manifest import MANIFEST_FILE, parse_manifest
from sandbox.base import Mount, SandboxSpec
from sandbox.ownership import give_to_sandbox_user
from worker.context import WorkerContext
from worker.workspace import GIT_SAFE, init_repo, unpack

TAIL = 2_000


def validate_child(ctx: WorkerContext, parent_code: bytes, patch: str, limits: LimitsConfig) -> str | None:
    """None if the child is sound, else the reason it is rejected."""
    with tempfile.TemporaryDirectory(prefix="clade-validate-", dir=_ensure(ctx.work_dir)) as tmp:
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
        manifest_path = code / MANIFEST_FILE
        try:
            manifest = parse_manifest(manifest_path.read_bytes() if manifest_path.is_file() else None)
        except InvalidAgentError as exc:
            return f"the child does not start: {exc}"
        give_to_sandbox_user(code)
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
            labels={"dev.clade.purpose": "validate"},
        )
        with closing(ctx.backend.start(spec)) as sandbox:
            for name, command in commands:
                result = sandbox.exec(
                    ["sh", "-c", command], timeout_s=limits.test_timeout_s, cwd="/clade/agent"
                )
                if result.timed_out or result.exit_code != 0:
                    what = "timed out" if result.timed_out else f"exited with {result.exit_code}"
                    output = (result.stdout + result.stderr)[-TAIL:]
                    return f"the child's {name} command ({command}) {what}: {output}"
    return None


def _ensure(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder
