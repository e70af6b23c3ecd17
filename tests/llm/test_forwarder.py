"""The in-sandbox forwarder as a real process (stdlib only: run with -I -S) in front of a unix
echo server."""

from __future__ import annotations

import ast
import errno
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from worker.llm import forwarder_script_path

from .support import forwarder

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def echo_socket(sock_dir: Path) -> Iterator[Path]:
    """A unix server that echoes upper-cased bytes until the client half-closes."""
    path = sock_dir / "echo.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(64)

    def serve_one(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(4096):
                conn.sendall(data.upper())

    def accept_loop() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return  # the listener was closed at teardown
            threading.Thread(target=serve_one, args=(conn,), daemon=True).start()

    threading.Thread(target=accept_loop, daemon=True).start()
    yield path
    server.close()


def roundtrip(port: int, payload: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(payload)
        conn.shutdown(socket.SHUT_WR)  # the half-close must travel through
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_script_path_is_the_forwarder_and_imports_only_the_standard_library() -> None:
    path = forwarder_script_path()
    assert path.name == "forwarder.py" and path.is_file()
    tree = ast.parse(path.read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])
    }
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}


def test_concurrent_connections_are_piped_independently(echo_socket: Path) -> None:
    with forwarder(echo_socket) as (_, port):
        payloads = [bytes([97 + i % 26]) * (1000 + 50_000 * (i % 3)) for i in range(24)]
        with ThreadPoolExecutor(12) as pool:
            results = list(pool.map(lambda p: roundtrip(port, p), payloads))
    assert results == [p.upper() for p in payloads]


def test_missing_socket_drops_the_connection_but_keeps_serving(sock_dir: Path, echo_socket: Path) -> None:
    missing = sock_dir / "nobody.sock"
    with forwarder(missing) as (proc, port):
        # Closed with our bytes unread: TCP may turn that into a reset, or the close may come
        # before our half-close (ENOTCONN); each says the connection was dropped.
        try:
            assert roundtrip(port, b"hello") == b""
        except ConnectionResetError:
            pass
        except OSError as exc:
            if exc.errno != errno.ENOTCONN:
                raise
        assert proc.poll() is None
        assert proc.stderr is not None
        assert "cannot reach" in proc.stderr.readline()
    with forwarder(echo_socket) as (_, port):
        assert roundtrip(port, b"hello") == b"HELLO"


def test_sigterm_exits_promptly_with_status_0(echo_socket: Path) -> None:
    with forwarder(echo_socket) as (proc, port):
        idle = socket.create_connection(("127.0.0.1", port))  # an open connection must not block
        proc.send_signal(signal.SIGTERM)
        # A forwarder that waited for its open connections would never exit: the deadline
        # only bounds a loaded machine.
        assert proc.wait(timeout=20) == 0
        idle.close()
