"""Many simulated runs (presets x landscapes x seeds), in worker processes, reported as they end."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass

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
    command's own message."""
    signal.signal(signal.SIGINT, lambda _signum, _frame: os._exit(INTERRUPTED_EXIT))


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
    if processes <= 1:
        for job in jobs:
            try:
                results[job] = _run(job)
            except Exception as exc:  # re-raised naming the run
                raise _failed(job, exc) from exc
            progress(results[job], len(results), len(jobs))
        return [results[job] for job in jobs]
    # No more processes than runs (and at least one: an empty list still gives its empty answer).
    pool = ProcessPoolExecutor(max_workers=max(1, min(processes, len(jobs))), initializer=_end_on_interrupt)
    try:
        futures: dict[Future[SimResult], Job] = {pool.submit(_run, job): job for job in jobs}
        for future in as_completed(futures):
            job = futures[future]
            try:
                results[job] = future.result()
            except Exception as exc:  # re-raised naming the run
                raise _failed(job, exc) from exc
            progress(results[job], len(results), len(jobs))
    finally:
        # On a failure or Ctrl-C the queued runs are dropped, not waited for (hours, in a sitting).
        pool.shutdown(wait=True, cancel_futures=True)
    return [results[job] for job in jobs]
