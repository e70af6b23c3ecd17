"""A child process's output lines as they come, read on a thread so that every wait for one can
have a deadline (a blocking readline has none)."""

from __future__ import annotations

import queue
import subprocess
import threading
import time
from typing import IO


class Output:
    """`process`'s stdout, a line at a time; `lines` ends with None when the process closes it."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        assert process.stdout is not None
        threading.Thread(target=self._read, args=(process.stdout,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def next_line(self, deadline: float) -> str:
        try:
            line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty as exc:
            raise AssertionError(self._last("the process printed nothing more in time")) from exc
        if line is None:
            raise AssertionError(self._last("the process exited early"))
        self.seen.append(line)
        return line

    def _last(self, what: str) -> str:
        return what + ":\n" + "\n".join(self.seen[-40:])
