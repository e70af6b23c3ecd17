"""A test double of the sandbox backend: runs commands as host subprocesses. NO ISOLATION.

Paths under a mount's target are rewritten to the mount's host source (in the command,
the working directory and environment values), so a grader that only speaks container
paths works unchanged. For the benchmark tests only; never for untrusted code.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from collections.abc import Mapping

from sandbox.base import ExecResult, SandboxFileError, SandboxSpec

IMAGE = "host-python (local test double)"


class LocalSandbox:
    def __init__(self, spec: SandboxSpec):
        self.spec = spec
        self._id = f"local-{uuid.uuid4().hex[:8]}"
        self.commands: list[list[str]] = []
        self.closed = False

    @property
    def id(self) -> str:
        return self._id

    def host_path(self, value: str) -> str:
        for mount in self.spec.mounts:
            if value == mount.target or value.startswith(mount.target.rstrip("/") + "/"):
                return str(mount.source) + value[len(mount.target.rstrip("/")) :]
        return value

    def exec(
        self,
        command: list[str],
        *,
        timeout_s: float,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> ExecResult:
        self.commands.append(list(command))
        full_env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp")}
        # The sandbox image has a bare pytest; the host's plugins (pytest-benchmark,
        # pytest-timeout, ...) are not part of it, and loading them costs seconds per run.
        full_env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        full_env |= {k: self.host_path(v) for k, v in {**self.spec.env, **(env or {})}.items()}
        started = time.monotonic()
        proc = subprocess.Popen(
            [self.host_path(arg) for arg in command],
            cwd=self.host_path(cwd or self.spec.workdir),
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        timed_out = False
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        return ExecResult(
            exit_code=proc.returncode,
            stdout=out.decode(errors="replace"),
            stderr=err.decode(errors="replace"),
            timed_out=timed_out,
            duration_s=time.monotonic() - started,
        )

    def write_file(self, path: str, data: bytes) -> None:
        target = self.host_path(path)
        if target == path:
            raise SandboxFileError(f"{path} is outside every mount of the local test double")
        with open(target, "wb") as out:
            out.write(data)

    def read_file(self, path: str, *, max_bytes: int = 10_000_000) -> bytes:
        target = self.host_path(path)
        if target == path:
            raise SandboxFileError(f"{path} is outside every mount of the local test double")
        with open(target, "rb") as source:
            return source.read(max_bytes)

    def close(self) -> None:
        self.closed = True


class LocalBackend:
    name = "local-test-double"

    def __init__(self) -> None:
        self.started: list[LocalSandbox] = []

    def start(self, spec: SandboxSpec) -> LocalSandbox:
        sandbox = LocalSandbox(spec)
        self.started.append(sandbox)
        return sandbox

    def remove_orphans(self, owner: str | None = None) -> list[str]:
        return [sandbox.id for sandbox in self.started if not sandbox.closed]

    def remove_abandoned(self) -> list[str]:
        return []  # every sandbox here belongs to this live process
