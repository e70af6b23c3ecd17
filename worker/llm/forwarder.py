"""TCP -> unix socket forwarder run inside a sandbox (standard library only, Python 3.8+).

Mounted read-only at /clade/bin/forwarder.py and started with the image's
python3, it makes the worker's LLM gateway (a unix socket mounted into the
container) reachable at OPENAI_BASE_URL=http://127.0.0.1:<port>/v1:

    python3 forwarder.py --port 8080 --socket /clade/llm/gateway.sock

Each TCP connection gets its own unix connection and two pump threads; a
half-close is passed on so that HTTP clients see the end of a response.
Exits with status 0 on SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import sys
import threading
from pathlib import Path
from types import FrameType

DEFAULT_PORT = 8080
DEFAULT_SOCKET = "/clade/llm/gateway.sock"
CHUNK = 65536


def script_path() -> Path:
    """This file, for the worker to mount into sandboxes."""
    return Path(__file__).resolve()


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while True:
            data = src.recv(CHUNK)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass  # a reset or closed peer ends this direction; the other one finishes on its own
    finally:
        with contextlib.suppress(OSError):  # the peer is already gone
            dst.shutdown(socket.SHUT_WR)


def _serve_connection(client: socket.socket, socket_path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(socket_path)
    except OSError as exc:
        print(f"clade forwarder: cannot reach {socket_path}: {exc}", file=sys.stderr, flush=True)
        upstream.close()
        client.close()
        return
    back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
    back.start()
    _pump(client, upstream)
    back.join()
    upstream.close()
    client.close()


def serve(port: int, socket_path: str, host: str = "127.0.0.1") -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
        listener.listen(128)
        print(
            f"clade forwarder: listening on {host}:{listener.getsockname()[1]} -> {socket_path}",
            file=sys.stderr,
            flush=True,
        )
        while True:
            client, _ = listener.accept()
            threading.Thread(target=_serve_connection, args=(client, socket_path), daemon=True).start()
    finally:
        listener.close()


def _exit_on_signal(signum: int, frame: FrameType | None) -> None:
    # At once, without the interpreter's shutdown: that could wait on a lock a pump thread
    # holds (stderr's, a socket's), and the forwarder has nothing to save.
    os._exit(0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Forward 127.0.0.1:PORT to a unix socket.")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--socket", default=DEFAULT_SOCKET)
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _exit_on_signal)
    signal.signal(signal.SIGINT, _exit_on_signal)
    serve(args.port, args.socket, args.host)
    return 0


if __name__ == "__main__":
    sys.exit(main())
