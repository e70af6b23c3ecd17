"""Whether the process that started a sandbox is still alive, judged by another process.

Every sandbox is labelled with a `ProcessStamp` of the process that started it: the host's
name, the boot and pid namespace the pid belongs to, the pid, and the process's start time
(clock ticks after boot, field 22 of /proc/<pid>/stat). A pid is reused after its process
exits; the pid with its start time names one process only.

Another process judges a stamp only where it can see the stamped process:
- same boot and pid namespace: the owner is gone when no process has that pid, when the
  process there started at another time (the pid was reused), or when it is a zombie;
- same host name, an earlier boot: gone (it died with that boot);
- anything else (another machine sharing the engine, a worker in a container with its own
  pid namespace): never judged gone; its own host cleans it. (A worker removes such a sandbox
  only when it carries its own name, see `DockerBackend.remove_abandoned`.)

Linux only: without /proc the stamp is partial and nothing is judged gone.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from sandbox.base import LABEL_PREFIX

HOST_LABEL = f"{LABEL_PREFIX}.host"
BOOT_LABEL = f"{LABEL_PREFIX}.boot"
PID_NAMESPACE_LABEL = f"{LABEL_PREFIX}.pid-namespace"
PID_LABEL = f"{LABEL_PREFIX}.pid"
PID_START_LABEL = f"{LABEL_PREFIX}.pid-start"

_PROC = "/proc"


@dataclass(frozen=True)
class ProcessStamp:
    host: str
    boot: str  # the kernel's boot id; "" when unknown
    pid_namespace: str  # inode of the pid namespace; "" when unknown
    pid: int
    start: str  # clock ticks after boot; "" when unknown

    def labels(self) -> dict[str, str]:
        return {
            HOST_LABEL: self.host,
            BOOT_LABEL: self.boot,
            PID_NAMESPACE_LABEL: self.pid_namespace,
            PID_LABEL: str(self.pid),
            PID_START_LABEL: self.start,
        }

    @classmethod
    def from_labels(cls, labels: Mapping[str, str]) -> ProcessStamp | None:
        """The stamp in a sandbox's labels, or None when it has none (or a malformed one)."""
        try:
            return cls(
                host=labels[HOST_LABEL],
                boot=labels[BOOT_LABEL],
                pid_namespace=labels[PID_NAMESPACE_LABEL],
                pid=int(labels[PID_LABEL]),
                start=labels[PID_START_LABEL],
            )
        except (KeyError, ValueError):
            return None

    def visible_from(self, other: ProcessStamp) -> bool:
        """Whether `other`'s process can look this stamp's pid up: same boot and pid namespace."""
        known = bool(self.boot and self.start and self.pid_namespace)
        return known and (self.boot, self.pid_namespace) == (other.boot, other.pid_namespace)

    def is_gone(self, *, seen_from: ProcessStamp) -> bool:
        """True only when `seen_from`'s process can tell that this stamp's process has exited."""
        if self.visible_from(seen_from):
            return start_time(self.pid) != self.start
        earlier_boot = bool(self.boot and seen_from.boot) and self.boot != seen_from.boot
        return earlier_boot and self.host == seen_from.host


def start_time(pid: int) -> str | None:
    """The start time of a live process with this pid, or None when there is none (or a zombie)."""
    try:
        with open(f"{_PROC}/{pid}/stat") as handle:
            stat = handle.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name (field 2) is in parentheses and may hold spaces or parentheses itself.
    fields = stat[stat.rindex(")") + 2 :].split()
    state, start = fields[0], fields[19]
    return None if state in ("Z", "X") else start


def _read(path: str) -> str:
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return ""


def _pid_namespace() -> str:
    try:
        return str(os.stat(f"{_PROC}/self/ns/pid").st_ino)
    except OSError:
        return ""


def this_process() -> ProcessStamp:
    """The stamp of the calling process (a forked child gets its own)."""
    return _stamp_of(os.getpid())


@lru_cache(maxsize=8)
def _stamp_of(pid: int) -> ProcessStamp:
    return ProcessStamp(
        host=socket.gethostname(),
        boot=_read(f"{_PROC}/sys/kernel/random/boot_id"),
        pid_namespace=_pid_namespace(),
        pid=pid,
        start=start_time(pid) or "",
    )
