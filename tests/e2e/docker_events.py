"""Docker events collected live, from before a test acts until it stops looking.

The engine keeps only its last 256 events for a `since` query, so a test that asks afterwards,
while other tests create containers on the same engine, may find its own events gone.
"""

from __future__ import annotations

import threading
from typing import Any


class ContainerCreations:
    """Attributes of every container created with `label` while open (a context manager)."""

    def __init__(self, docker_client: Any, label: str) -> None:
        self._stream = docker_client.events(
            decode=True, filters={"type": "container", "event": "create", "label": label}
        )
        self._seen: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, daemon=True)

    def _read(self) -> None:
        try:
            for event in self._stream:
                with self._lock:
                    self._seen.append(dict(event["Actor"]["Attributes"]))
        except (OSError, ValueError):
            return  # the stream was closed by `__exit__`

    def __enter__(self) -> ContainerCreations:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stream.close()
        self._thread.join(timeout=10)

    def seen(self) -> list[dict[str, str]]:
        with self._lock:
            return list(self._seen)
