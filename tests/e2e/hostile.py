"""Hostile clients against a live service, all at once, each bounded: a fixed number of them,
each stopping at a shared deadline or when told.

- stalled readers: start `GET /api/agents/<id>/export` of a large agent and never read;
- slowloris: request headers sent a line at a time, never finished (reconnecting when cut off);
- alias bombs: a YAML billion-laughs posted to the parse endpoint (with the admin token);
- slow readers: a large export read a kilobyte at a time.

Used by tests/e2e/test_hostile_clients.py and perf/hostile_clients.py.
"""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, field
from types import TracebackType

import httpx

# 369 bytes that stand for 9^9 strings once the aliases are followed.
ALIAS_BOMB = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{','.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)
)


@dataclass(frozen=True)
class HostileMix:
    stalled_readers: int = 20
    slowloris: int = 30
    bomb_posters: int = 2
    slow_readers: int = 2


@dataclass
class HostileLoad:
    """Starts the clients on enter; on exit tells them to stop and waits for them (bounded)."""

    url: str
    admin_token: str
    big_agent: str
    mix: HostileMix = field(default_factory=HostileMix)
    deadline_s: float = 900.0
    counts: Counter[str] = field(default_factory=Counter)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _sockets: ExitStack = field(default_factory=ExitStack)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __enter__(self) -> HostileLoad:
        self._until = time.monotonic() + self.deadline_s
        for _ in range(self.mix.stalled_readers):
            self._stall_export()
        for target, many in [
            (self._slowloris, self.mix.slowloris),
            (self._bombs, self.mix.bomb_posters),
            (self._slow_reader, self.mix.slow_readers),
        ]:
            for _ in range(many):
                thread = threading.Thread(target=target, daemon=True)
                thread.start()
                self._threads.append(thread)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)
        self._sockets.close()

    def _running(self) -> bool:
        return not self._stop.is_set() and time.monotonic() < self._until

    def _count(self, what: str) -> None:
        with self._lock:
            self.counts[what] += 1

    def _connect(self) -> socket.socket:
        host, port = self.url.removeprefix("http://").split(":")
        sock = socket.create_connection((host, int(port)), timeout=30)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        return sock

    def _request(self, path: str) -> bytes:
        host = self.url.removeprefix("http://")
        auth = f"Authorization: Bearer {self.admin_token}"
        return f"GET {path} HTTP/1.1\r\nHost: {host}\r\n{auth}\r\n\r\n".encode()

    def _stall_export(self) -> None:
        """Sent once, never read: the server's send buffer fills and its answer stalls."""
        sock = self._sockets.enter_context(self._connect())
        sock.sendall(self._request(f"/api/agents/{self.big_agent}/export"))
        self._count("stalled export started")

    def _slowloris(self) -> None:
        while self._running():
            try:
                with self._connect() as sock:
                    sock.sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\n")
                    self._count("slowloris connection")
                    sock.settimeout(0.5)
                    while self._running():
                        sock.sendall(b"X-Slow: still-coming\r\n")
                        try:
                            if sock.recv(1024) == b"":
                                break  # the server cut it off
                        except TimeoutError:
                            continue
                    self._count("slowloris cut off")
            except OSError:  # reset by the server, or refused past the connection limit
                self._count("slowloris cut off")
                self._stop.wait(0.2)

    def _bombs(self) -> None:
        headers = {"Authorization": f"Bearer {self.admin_token}"}
        with httpx.Client(base_url=self.url, headers=headers, timeout=60) as client:
            while self._running():
                try:
                    response = client.post("/api/dashboard/parse-config", json={"text": ALIAS_BOMB})
                    self._count(f"alias bomb answered {response.status_code}")
                except httpx.TransportError:
                    self._count("alias bomb failed")

    def _slow_reader(self) -> None:
        while self._running():
            try:
                with self._connect() as sock:
                    sock.sendall(self._request(f"/api/agents/{self.big_agent}/export"))
                    sock.settimeout(5)
                    while self._running():
                        if not sock.recv(1024):
                            break
                        self._count("slow reader kilobyte")
                        self._stop.wait(0.05)
            except OSError:
                self._count("slow reader failed")
                self._stop.wait(0.2)
