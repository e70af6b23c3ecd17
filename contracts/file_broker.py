"""The embedded file broker: kombu's filesystem transport, with redelivery when a consumer dies.

kombu's transport deletes a message file as it hands the message out, so the job of a worker
killed mid-task was gone until the run driver sent it again (its time limit plus a margin later).
Here a consumer instead moves the file into a claim folder of its own process,

    <broker>/queue/<time>_<uuid>.clade.msg  ->  <broker>/claimed/<pid>-<start>/<same name>

and removes it only when the message is acknowledged (or given back: rejected with requeue,
restored at a clean shutdown). Every consumer, from time to time as it polls, moves the files of
claim folders whose process is gone back into the queue, so the job is delivered again to any
live worker, a restarted one included. Moves are renames within one folder tree: each file has
exactly one place at a time, and two consumers racing for it cannot both win.

The file broker serves one machine (all its processes share the folder), so "process gone" is
asked of this machine's process table; the process's start time guards against a reused pid.
"""

from __future__ import annotations

import os
import time
from contextlib import suppress
from pathlib import Path
from queue import Empty
from typing import Any

from kombu.transport import filesystem, virtual
from kombu.utils.json import loads

CLAIMED_FOLDER = "claimed"
CLAIM_PROPERTY = "clade_claim"  # a delivered message's claim file, in its properties
SWEEP_INTERVAL_S = 2.0


def process_start(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:  # no /proc: only whether the pid exists
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        return "?"
    # Field 22; the command name (field 2) may hold spaces, so count after its closing paren.
    return stat.rpartition(")")[2].split()[19]


def claimer_alive(folder_name: str) -> bool:
    pid, _, start = folder_name.partition("-")
    if not pid.isdigit():
        return True  # not ours to judge
    found = process_start(int(pid))
    return found is not None and found in (start, "?")


def requeue_abandoned(broker: Path, *, keep: str | None = None) -> int:
    """Move the messages claimed by processes that are gone back into the queue; how many."""
    claimed, queue = broker / CLAIMED_FOLDER, broker / "queue"
    moved = 0
    try:
        folders = list(os.scandir(claimed))
    except FileNotFoundError:
        return 0
    for folder in folders:
        if folder.name == keep or not folder.is_dir() or claimer_alive(folder.name):
            continue
        for name in os.listdir(folder.path):
            try:
                os.rename(os.path.join(folder.path, name), queue / name)
            except FileNotFoundError:  # another consumer moved it first
                continue
            moved += 1
        with suppress(OSError):  # not empty (a claim landed meanwhile) or gone: the next sweep sees it
            os.rmdir(folder.path)
    return moved


class Channel(filesystem.Channel):
    """Claims instead of deleting; acknowledging (or giving back) removes the claim."""

    _claim_folder: Path | None = None
    _swept_at = 0.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[no-untyped-call]
        # Queues consumed without acknowledgements (Celery's remote control): taken, not claimed.
        self._no_ack_queues: set[str] = set()

    def basic_consume(self, queue: str, no_ack: bool, *args: Any, **kwargs: Any) -> Any:
        if no_ack:
            self._no_ack_queues.add(queue)
        return super().basic_consume(queue, no_ack, *args, **kwargs)  # type: ignore[no-untyped-call]

    def basic_get(self, queue: str, no_ack: bool = False, **kwargs: Any) -> Any:
        message = super().basic_get(queue, no_ack, **kwargs)  # type: ignore[no-untyped-call]
        if no_ack:
            _release(message)
        return message

    @property
    def _broker(self) -> Path:
        return Path(self.data_folder_in).parent

    def _claims(self) -> Path:
        pid = os.getpid()  # a forked child claims in a folder of its own
        if self._claim_folder is None or not self._claim_folder.name.startswith(f"{pid}-"):
            folder = self._broker / CLAIMED_FOLDER / f"{pid}-{process_start(pid) or '?'}"
            folder.mkdir(parents=True, exist_ok=True)
            self._claim_folder = folder
        return self._claim_folder

    def _get(self, queue: str, timeout: float | None = None) -> dict[str, Any]:
        claims = self._claims()
        now = time.monotonic()
        if now - self._swept_at >= SWEEP_INTERVAL_S:
            self._swept_at = now
            requeue_abandoned(self._broker, keep=claims.name)
        wanted = f"{queue}.msg"
        for name in sorted(os.listdir(self.data_folder_in)):
            if name.partition(".")[2] != wanted:
                continue
            claim = claims / name
            try:
                os.rename(os.path.join(self.data_folder_in, name), claim)
            except FileNotFoundError:  # another consumer took it
                continue
            payload: dict[str, Any] = loads(claim.read_bytes())  # type: ignore[no-untyped-call]
            if queue in self._no_ack_queues:  # no acknowledgement will come to release it
                claim.unlink()
            else:
                payload.setdefault("properties", {})[CLAIM_PROPERTY] = str(claim)
            return payload
        raise Empty()

    def basic_ack(self, delivery_tag: Any, multiple: bool = False) -> None:
        message = self.qos._delivered.get(delivery_tag)
        super().basic_ack(delivery_tag, multiple=multiple)  # type: ignore[no-untyped-call]
        _release(message)

    def basic_reject(self, delivery_tag: Any, requeue: bool = False) -> None:
        message = self.qos._delivered.get(delivery_tag)
        # Requeued first, then released: never lost in between.
        super().basic_reject(delivery_tag, requeue=requeue)  # type: ignore[no-untyped-call]
        _release(message)

    def _restore(self, message: virtual.Message) -> None:
        super()._restore(message)  # type: ignore[no-untyped-call]
        _release(message)


def _release(message: virtual.Message | None) -> None:
    claim = message.properties.get(CLAIM_PROPERTY) if message is not None else None
    if claim:
        Path(claim).unlink(missing_ok=True)


class Transport(filesystem.Transport):
    Channel = Channel
