"""One `docker exec` with a wall-clock deadline, bounded output capture and optional stdin.

The SDK's streaming helpers block without a timeout, so this reads the hijacked
exec socket itself: a poll loop with a deadline, Docker's 8-byte frame headers
parsed incrementally, and output beyond the cap drained and dropped (never
buffered), so the command is not blocked on a full pipe.
"""

from __future__ import annotations

import selectors
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from docker.errors import DockerException, NotFound

from sandbox.base import SandboxError

_READ_CHUNK = 65536
_STDOUT, _STDERR = 1, 2


class CommandSurvivedKill(SandboxError, TimeoutError):
    """A timed-out command was still running after the kill grace period."""


@dataclass(frozen=True)
class RawExec:
    exit_code: int
    stdout: bytes
    stderr: bytes
    timed_out: bool
    output_truncated: bool
    duration_s: float


class CappedOutput:
    """stdout and stderr sharing one byte budget; the rest is counted and dropped."""

    def __init__(self, cap_bytes: int) -> None:
        self._left = cap_bytes
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.truncated = False

    def add(self, stream: int, data: bytes) -> None:
        if stream not in (_STDOUT, _STDERR):
            return
        kept = data[: self._left]
        if len(kept) < len(data):
            self.truncated = True
        self._left -= len(kept)
        (self.stdout if stream == _STDOUT else self.stderr).extend(kept)


class FrameDemuxer:
    """Splits Docker's multiplexed stream (header: stream id, 3 zero bytes, big-endian size)."""

    def __init__(self, sink: Callable[[int, bytes], None]) -> None:
        self._sink = sink
        self._header = b""
        self._stream = 0
        self._remaining = 0

    def feed(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            if self._remaining == 0:
                needed = 8 - len(self._header)
                self._header += bytes(view[:needed])
                view = view[needed:]
                if len(self._header) == 8:
                    self._stream = self._header[0]
                    self._remaining = int.from_bytes(self._header[4:8], "big")
                    self._header = b""
                continue
            take = min(self._remaining, len(view))
            self._sink(self._stream, bytes(view[:take]))
            self._remaining -= take
            view = view[take:]


@dataclass(frozen=True)
class ExecRequest:
    container_id: str
    command: list[str]
    user: str
    env: dict[str, str]
    workdir: str | None
    timeout_s: float
    output_cap_bytes: int
    stdin: bytes | None = None


def run_exec(api: Any, request: ExecRequest, *, kill: Callable[[], None], kill_grace_s: float) -> RawExec:
    """Run one command; on timeout call `kill` (repeatedly) until the command is gone.

    Raises `SandboxError` when the engine fails or the command outlives `kill_grace_s`.
    """
    try:
        exec_id = api.exec_create(
            request.container_id,
            request.command,
            stdout=True,
            stderr=True,
            stdin=request.stdin is not None,
            tty=False,
            user=request.user,
            environment=[f"{key}={value}" for key, value in request.env.items()],
            workdir=request.workdir,
        )["Id"]
        started = time.monotonic()
        handle = api.exec_start(exec_id, socket=True)
    except NotFound as exc:
        raise SandboxError(f"sandbox {request.container_id[:12]} is gone") from exc
    except (DockerException, OSError) as exc:
        raise SandboxError(f"could not start a command in the sandbox: {exc}") from exc
    output = CappedOutput(request.output_cap_bytes)
    deadline = started + request.timeout_s
    sock = _raw_socket(handle)
    try:
        pump = _Pump(sock, FrameDemuxer(output.add), request.stdin)
        timed_out = not pump.run_until(deadline)
        if timed_out:
            _kill_until(pump.run_until, kill, kill_grace_s)
    finally:
        handle.close()
        sock.close()
    # The stream can end before the process does (it may close its own stdout).
    exit_code = _wait_exit(api, exec_id, time.monotonic() + kill_grace_s if timed_out else deadline)
    if exit_code is None and not timed_out:
        timed_out = True
        _kill_until(lambda until: _wait_exit(api, exec_id, until) is not None, kill, kill_grace_s)
        exit_code = _wait_exit(api, exec_id, time.monotonic())
    if exit_code is None:
        raise CommandSurvivedKill(f"a timed-out command survived {kill_grace_s:.0f}s of SIGKILL")
    return RawExec(
        exit_code=exit_code,
        stdout=bytes(output.stdout),
        stderr=bytes(output.stderr),
        timed_out=timed_out,
        output_truncated=output.truncated,
        duration_s=time.monotonic() - started,
    )


def _kill_until(done_by: Callable[[float], bool], kill: Callable[[], None], grace_s: float) -> None:
    give_up = time.monotonic() + grace_s
    while time.monotonic() < give_up:
        kill()
        if done_by(min(give_up, time.monotonic() + 0.5)):
            return
    raise CommandSurvivedKill(f"a timed-out command survived {grace_s:.0f}s of SIGKILL")


def _wait_exit(api: Any, exec_id: str, until: float) -> int | None:
    """Exit code once the exec has finished, or None if it is still running at `until`."""
    while True:
        try:
            state = api.exec_inspect(exec_id)
        except (DockerException, OSError) as exc:
            raise SandboxError(f"lost track of a command: {exc}") from exc
        if not state.get("Running"):
            code = state.get("ExitCode")
            return int(code) if code is not None else -1
        if time.monotonic() >= until:
            return None
        time.sleep(0.01)


class _Pump:
    """Moves stdin in and frames out of one exec socket until EOF or a deadline."""

    def __init__(self, sock: socket.socket, demux: FrameDemuxer, stdin: bytes | None) -> None:
        self._sock = sock
        self._demux = demux
        self._pending = memoryview(stdin) if stdin is not None else None
        self._eof = False
        sock.setblocking(False)
        if self._pending is not None and not self._pending:
            self._close_stdin()

    def run_until(self, deadline: float) -> bool:
        """True once the output stream has ended; False if `deadline` came first."""
        with selectors.DefaultSelector() as selector:  # epoll: no FD_SETSIZE limit
            selector.register(self._sock, self._events())
            while not self._eof:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                ready = selector.select(left)
                events = 0
                for _key, mask in ready:
                    events |= mask
                if events & selectors.EVENT_WRITE:
                    self._write()
                    selector.modify(self._sock, self._events())
                if events & selectors.EVENT_READ or self._buffered():
                    self._read()
        return True

    def _events(self) -> int:
        wanted = selectors.EVENT_READ
        return wanted | selectors.EVENT_WRITE if self._pending is not None else wanted

    def _buffered(self) -> bool:
        # TLS sockets may hold decrypted bytes that select() cannot see.
        pending = getattr(self._sock, "pending", None)
        return bool(pending and pending())

    def _read(self) -> None:
        try:
            data = self._sock.recv(_READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            raise SandboxError(f"reading command output failed: {exc}") from exc
        if not data:
            self._eof = True
        else:
            self._demux.feed(data)

    def _write(self) -> None:
        if self._pending is None:
            return
        try:
            sent = self._sock.send(self._pending[:_READ_CHUNK])
        except (BlockingIOError, InterruptedError):
            return
        except (BrokenPipeError, ConnectionResetError):
            self._pending = None  # the command exited without reading all of its input
            return
        except OSError as exc:
            raise SandboxError(f"writing command input failed: {exc}") from exc
        self._pending = self._pending[sent:]
        if not self._pending:
            self._close_stdin()

    def _close_stdin(self) -> None:
        self._pending = None
        self._sock.shutdown(socket.SHUT_WR)  # the engine then closes the command's stdin


def _raw_socket(handle: Any) -> socket.socket:
    # `exec_start(socket=True)` returns a SocketIO over the engine's unix socket, or the
    # TLS socket itself for https engines; both wrap a real socket we can poll.
    if isinstance(handle, socket.socket):
        return handle
    inner = getattr(handle, "_sock", None)
    if isinstance(inner, socket.socket):
        return inner
    raise SandboxError(f"unsupported Docker transport for exec: {type(handle).__name__}")
