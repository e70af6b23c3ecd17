"""Forks until the kernel refuses and reports how far it got; then every process forks forever."""

from __future__ import annotations

import contextlib
import os
import signal

from probe import refused, report

children: list[int] = []
error = None
while len(children) < 100_000:
    try:
        pid = os.fork()
    except OSError as exc:
        error = refused(exc)
        break
    if pid == 0:
        signal.pause()
        os._exit(0)
    children.append(pid)
report({"forked": len(children), "stopped_by": error})
for pid in children:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
while True:  # the bomb: parents and children alike, failures ignored
    with contextlib.suppress(OSError):
        os.fork()
