"""A sitting stops as one: Ctrl-C, SIGTERM or a closed terminal ends the command and its worker
processes at once, and a command that is killed outright takes its workers with it.

A sitting's runs live in memory until every one has ended, so a stopped sitting has nothing to
save: the workers end without a word (a traceback each would bury the command's own message),
and the command says what it kept."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from types import FrameType
from typing import Any

from contracts.lifetime import die_with_parent

# Ctrl-C, `kill` / `timeout` / a service manager, and a terminal that closes.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def exit_code(signum: int) -> int:
    """The shell's exit code for a process ended by `signum`."""
    return 128 + signum


class Interrupted(KeyboardInterrupt):
    """The sitting was stopped by a signal. A KeyboardInterrupt, so that no `except Exception`
    in a run can swallow it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class StopSignals:
    """The stop signals the command itself received, remembered. Python drops an exception that
    a handler raises inside a fork hook or a finalizer ("Exception ignored in ..."), and the
    sitting then ran on; `check` raises it again between runs."""

    def __init__(self) -> None:
        self.seen: int | None = None

    def __call__(self, signum: int, _frame: FrameType | None) -> None:
        self.seen = signum
        raise Interrupted(signum)

    def check(self) -> None:
        if self.seen is not None:
            raise Interrupted(self.seen)


def _is_default(signum: int, handler: Any) -> bool:
    # Python's own Ctrl-C handler counts as the default; an ignored signal (nohup) stays ignored.
    return handler is signal.SIG_DFL or (signum == signal.SIGINT and handler is signal.default_int_handler)


@contextmanager
def catching_stop_signals() -> Iterator[StopSignals]:
    """In the command: a stop signal raises `Interrupted` while the sitting runs. Signals can only
    be caught on the main thread; elsewhere Python's defaults stay. Nested, the outer catch holds."""
    outer = [h for h in map(signal.getsignal, STOP_SIGNALS) if isinstance(h, StopSignals)]
    if outer:  # inside an outer sitting's catch: it is the one
        yield outer[0]
        return
    stops = StopSignals()
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in STOP_SIGNALS:
            handler = signal.getsignal(signum)
            if _is_default(signum, handler):
                previous[signum] = handler
                signal.signal(signum, stops)
    try:
        yield stops
    finally:
        for stopped, handler in previous.items():
            signal.signal(stopped, handler)


@contextmanager
def holding_back_stop_signals() -> Iterator[None]:
    """Stop signals wait while worker processes are forked: one that lands in the middle of a fork
    is lost in the command, and in a worker before its handler is set it prints a traceback.
    Workers inherit the held-back mask and let the signals in once their handlers are set."""
    before = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _end_quietly(signum: int, _frame: FrameType | None) -> None:
    os._exit(exit_code(signum))


def start_worker(parent: int) -> None:
    """A worker process's initializer (`parent`: the command's pid): stop signals end it at once
    and quietly, and so does the command's death."""
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, _end_quietly)
    # An orphaned worker would wait for work forever.
    die_with_parent(parent, signal.SIGKILL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def kill_workers(pool: ProcessPoolExecutor) -> None:
    """End the pool's workers now rather than after their current runs (minutes each in a large
    sitting). Python 3.14 has `pool.kill_workers()`; before it only the pool's own map of them."""
    for process in list((pool._processes or {}).values()):
        process.kill()
