"""One running Docker sandbox: commands through exec, files through the container's own view.

The container's init (`docker-init`) runs a tiny keeper shell as the sandbox user.
On a timeout the sandbox signals the container; the init forwards the signal to the
keeper, which SIGKILLs every process of the sandbox user except itself. That needs no
new process (a fork bomb cannot block it) and catches processes that left the
command's session or process group. It also kills commands running concurrently in
the same sandbox: one command at a time is the intended use.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Self

from docker.errors import DockerException, NotFound

from sandbox.base import ExecResult, SandboxError, SandboxFileError, SandboxSpec
from sandbox.disk import GrowthWatch, MiB
from sandbox.docker_exec import CommandSurvivedKill, ExecRequest, RawExec, run_exec

log = logging.getLogger(__name__)

SANDBOX_USER = "1000:1000"
# Runs as PID 1's only child. `kill -9 -1` spares the caller and PID 1, and is a shell
# builtin, so it works even when the pids limit is exhausted.
# The container's PID 1. On SIGUSR1 it SIGKILLs every other process until none is left, then
# counts the sweep in its sleep's argument ("sleep 86400.<sweeps>"), which the host reads from
# the process list as the sweep's acknowledgement: a signal still pending when a timed-out
# command's successor starts would kill the successor.
KEEPER_SCRIPT = (
    'n=0; trap "while kill -9 -1 2>/dev/null; do :; done; n=\\$((n+1))" USR1;'
    ' while :; do sleep "86400.$n" & wait; done'
)
KEEPER_NAME = "clade-keeper"
_FILE_ERROR_CAP = 64 * 1024
_WRITE_SCRIPT = 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1" && wc -c < "$1"'
_WRITE_ATTEMPTS = 3
_ACK_WAIT_S = 2.0  # the longest a kill waits for the keeper to say its sweep is over


class DockerSandbox:
    """A running container; built by `DockerBackend.start`."""

    def __init__(
        self,
        client: Any,
        container_id: str,
        spec: SandboxSpec,
        *,
        kill_grace_s: float,
        file_timeout_s: float,
    ) -> None:
        self._client = client
        self._id = container_id
        self.spec = spec
        self._kill_grace_s = kill_grace_s
        self._file_timeout_s = file_timeout_s
        self._closed = False
        self._init_pid: str | None = None  # the host's pid of the container's PID 1
        self._writes: GrowthWatch | None = None

    @property
    def id(self) -> str:
        return self._id

    def guard_writes(self, limit_mb: int) -> None:
        """Kill every process of the sandbox whenever its read-write mounts have grown by more
        than `limit_mb` (checked by a watcher thread a few times a second, until `close`)."""
        folders = [mount.source for mount in self.spec.mounts if not mount.read_only]
        if folders and self._writes is None:
            self._writes = GrowthWatch(folders, limit_mb * MiB, self._stop_writer)

    @property
    def writes_exceeded(self) -> bool:
        return self._writes is not None and self._writes.exceeded

    def _stop_writer(self) -> None:
        try:
            self._kill_all()
        except SandboxError as exc:  # gone already: nothing is writing any more
            log.warning("stopping sandbox %s at its write limit: %s", self._id[:12], exc)

    def exec(
        self,
        command: list[str],
        *,
        timeout_s: float,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> ExecResult:
        raw = self._run(
            command,
            timeout_s=timeout_s,
            env=env,
            cwd=cwd,
            output_cap_bytes=self.spec.output_cap_bytes,
        )
        stderr = raw.stderr.decode(errors="replace")
        if self._writes is not None and self._writes.exceeded:
            stderr += (
                f"\nclade: every process was killed: the sandbox wrote more than"
                f" {self._writes.limit_bytes // MiB} MiB to its folders\n"
            )
        return ExecResult(
            exit_code=raw.exit_code,
            stdout=raw.stdout.decode(errors="replace"),
            stderr=stderr,
            timed_out=raw.timed_out,
            output_truncated=raw.output_truncated,
            duration_s=raw.duration_s,
        )

    def write_file(self, path: str, data: bytes) -> None:
        # Through the container's own view (tmpfs, mounts) as the sandbox user: the
        # engine's archive API cannot write to tmpfs or a read-only root. The script reports
        # the size it wrote: an engine under load can lose an exec's stdin (cat sees an empty
        # stream and succeeds), so a short write is tried again rather than taken as done.
        for _ in range(_WRITE_ATTEMPTS):
            raw = self._run(
                ["sh", "-c", _WRITE_SCRIPT, "clade-write", path],
                timeout_s=self._file_timeout_s,
                output_cap_bytes=_FILE_ERROR_CAP,
                stdin=data,
            )
            if raw.exit_code != 0 or raw.timed_out:
                raise SandboxFileError(f"cannot write {path}: {_why(raw)}")
            written = raw.stdout.decode(errors="replace").strip()
            if written == str(len(data)):
                return
        raise SandboxFileError(
            f"cannot write {path}: {written or 'no'} bytes arrived of {len(data)} in {_WRITE_ATTEMPTS} tries"
        )

    def read_file(self, path: str, *, max_bytes: int = 10_000_000) -> bytes:
        raw = self._run(
            ["head", "-c", str(max_bytes + 1), "--", path],
            timeout_s=self._file_timeout_s,
            output_cap_bytes=max_bytes + 1 + _FILE_ERROR_CAP,
        )
        if raw.exit_code != 0 or raw.timed_out:
            raise SandboxFileError(f"cannot read {path}: {_why(raw)}")
        if len(raw.stdout) > max_bytes:
            raise SandboxFileError(f"{path} is larger than {max_bytes} bytes")
        return raw.stdout

    def close(self) -> None:
        """Remove the container and its processes; safe to call twice."""
        if self._closed:
            return
        if self._writes is not None:
            self._writes.stop()
        try:
            self._client.api.remove_container(self._id, force=True, v=True)
        except NotFound:
            pass
        except (DockerException, OSError) as exc:
            raise SandboxError(f"could not remove sandbox {self._id[:12]}: {exc}") from exc
        self._closed = True

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _run(
        self,
        command: list[str],
        *,
        timeout_s: float,
        output_cap_bytes: int,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stdin: bytes | None = None,
    ) -> RawExec:
        if self._closed:
            raise SandboxError(f"sandbox {self._id[:12]} is closed")
        if timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        request = ExecRequest(
            container_id=self._id,
            command=list(command),
            user=SANDBOX_USER,
            env=dict(env or {}),
            workdir=cwd,
            timeout_s=timeout_s,
            output_cap_bytes=output_cap_bytes,
            stdin=stdin,
        )
        try:
            return run_exec(self._client.api, request, kill=self._kill_all, kill_grace_s=self._kill_grace_s)
        except CommandSurvivedKill:
            # Whatever survived SIGKILL must not outlive the sandbox: remove it now.
            self.close()
            raise

    def _kill_all(self) -> None:
        """Have the keeper SIGKILL every other process; return once it says the sweep is over
        (or after the kill grace), so no sweep is still pending when the next command starts."""
        try:
            before = self._keeper_sweeps()
            # SIGCONT first, in case the agent stopped the keeper.
            self._client.api.kill(self._id, signal="SIGCONT")
            self._client.api.kill(self._id, signal="SIGUSR1")
            # A sweep takes milliseconds; the bound keeps a keeper that cannot answer (starved of
            # pids or CPU) from using up the caller's whole kill grace: it signals again.
            give_up = time.monotonic() + min(_ACK_WAIT_S, self._kill_grace_s / 2)
            while before is not None and time.monotonic() < give_up:
                after = self._keeper_sweeps()
                if after is None or after > before:
                    return
                time.sleep(0.02)
        except NotFound as exc:
            raise SandboxError(f"sandbox {self._id[:12]} is gone") from exc
        except (DockerException, OSError) as exc:
            raise SandboxError(f"could not signal sandbox {self._id[:12]}: {exc}") from exc

    def _keeper_sweeps(self) -> int | None:
        """How many sweeps the keeper has finished, read from its own sleep's command line;
        -1 between two sleeps; None if no keeper of this module's runs (nothing to wait for).

        The keeper is the container's first process, or its first child under Docker's init;
        it is found by the pid the engine reports, so an agent's process cannot pose as it."""
        if self._init_pid is None:
            self._init_pid = str(self._client.api.inspect_container(self._id)["State"]["Pid"])
        rows = [
            row[:3] for row in self._client.api.top(self._id, ps_args="-o pid,ppid,args")["Processes"] or []
        ]
        keepers = {
            pid
            for pid, ppid, args in rows
            if self._init_pid in (pid, ppid) and args.startswith("sh -c ") and args.endswith(KEEPER_NAME)
        }
        if not keepers:
            return None
        for _, ppid, args in rows:
            if ppid in keepers and args.startswith("sleep 86400."):
                return int(args.removeprefix("sleep 86400.").strip() or "0")
        return -1


def _why(raw: RawExec) -> str:
    if raw.timed_out:
        return "timed out"
    return raw.stderr.decode(errors="replace").strip() or f"exit code {raw.exit_code}"
