"""Many simulated runs (presets x landscapes x seeds), in worker processes, reported as they end."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType

from service.simulation.landscape import LandscapeConfig
from service.simulation.presets import get_preset
from service.simulation.runner import SimResult, simulate


@dataclass(frozen=True)
class Job:
    preset: str
    landscape: LandscapeConfig  # built in or from a file: sent whole to the worker process
    seed: int
    budget: int


class SimRunError(RuntimeError):
    """A simulated run that raised; the message names it (the cause is chained)."""


# A worker stopped by Ctrl-C ends with the shell's code for it (128 + SIGINT).
INTERRUPTED_EXIT = 128 + signal.SIGINT


def _end_on_interrupt() -> None:
    """In a worker process: Ctrl-C ends it at once and quietly. Its run lives in memory only,
    and the sitting that wanted it is being dropped; a traceback per worker would bury the
    command's own message. A sitting started with Ctrl-C ignored (nohup) keeps ignoring it."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, lambda _signum, _frame: os._exit(INTERRUPTED_EXIT))
    # The parent forked this process with Ctrl-C held back; one that came meanwhile lands now.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


class _Interrupts:
    """Ctrl-C in the sitting's own process, remembered. Python drops a KeyboardInterrupt that is
    raised inside a fork hook or a finalizer ("Exception ignored in ..."), and the sitting then
    ran on; the flag is checked again after every run."""

    def __init__(self) -> None:
        self.seen = False

    def __call__(self, _signum: int, _frame: FrameType | None) -> None:
        self.seen = True
        raise KeyboardInterrupt

    def check(self) -> None:
        if self.seen:
            raise KeyboardInterrupt


@contextmanager
def _remembering_interrupts() -> Iterator[_Interrupts]:
    interrupts = _Interrupts()
    previous = signal.getsignal(signal.SIGINT)
    # Only where Ctrl-C raises today: not when ignored (nohup), not off the main thread.
    own = previous is signal.default_int_handler and threading.current_thread() is threading.main_thread()
    if own:
        signal.signal(signal.SIGINT, interrupts)
    try:
        yield interrupts
    finally:
        if own:
            signal.signal(signal.SIGINT, previous)


@contextmanager
def _holding_back_interrupts() -> Iterator[None]:
    """Ctrl-C waits while the worker processes are forked: one that lands in the middle of a fork
    is lost in the parent, and in a child before its handler is set it prints a traceback."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _run(job: Job) -> SimResult:
    return simulate(get_preset(job.preset), job.landscape, job.seed, job.budget)


def _failed(job: Job, exc: Exception) -> SimRunError:
    return SimRunError(
        f"the run of {job.preset} on {job.landscape.name}, seed {job.seed}, failed: "
        f"{type(exc).__name__}: {exc}"
    )


def run_all(
    jobs: Sequence[Job], *, processes: int, progress: Callable[[SimResult, int, int], None]
) -> list[SimResult]:
    """Every job's result, in the order of `jobs`; `progress(result, done, total)` as each ends."""
    results: dict[Job, SimResult] = {}
    with _remembering_interrupts() as interrupts:
        if processes <= 1:
            for job in jobs:
                try:
                    results[job] = _run(job)
                except Exception as exc:  # re-raised naming the run
                    raise _failed(job, exc) from exc
                interrupts.check()
                progress(results[job], len(results), len(jobs))
            return [results[job] for job in jobs]
        # No more processes than runs (and at least one: an empty list still gives its empty answer).
        workers = max(1, min(processes, len(jobs)))
        pool = ProcessPoolExecutor(max_workers=workers, initializer=_end_on_interrupt)
        try:
            with _holding_back_interrupts():  # every worker is started by the time all are queued
                futures: dict[Future[SimResult], Job] = {pool.submit(_run, job): job for job in jobs}
            for future in as_completed(futures):
                job = futures[future]
                try:
                    results[job] = future.result()
                except Exception as exc:  # re-raised naming the run
                    interrupts.check()  # a worker ended by Ctrl-C breaks the pool: that is the cause
                    raise _failed(job, exc) from exc
                interrupts.check()
                progress(results[job], len(results), len(jobs))
        finally:
            # On a failure or Ctrl-C the queued runs are dropped, not waited for (hours, in a sitting).
            pool.shutdown(wait=True, cancel_futures=True)
    return [results[job] for job in jobs]
