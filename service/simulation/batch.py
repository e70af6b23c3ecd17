"""Many simulated runs (presets x landscapes x seeds), in worker processes, reported as they end."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass

from service.simulation.landscape import LandscapeConfig
from service.simulation.presets import get_preset
from service.simulation.runner import SimResult, simulate
from service.simulation.stopping import (
    catching_stop_signals,
    holding_back_stop_signals,
    kill_workers,
    start_worker,
)


@dataclass(frozen=True)
class Job:
    preset: str
    landscape: LandscapeConfig  # built in or from a file: sent whole to the worker process
    seed: int
    budget: int


class SimRunError(RuntimeError):
    """A simulated run that raised; the message names it (the cause is chained)."""


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
    with catching_stop_signals() as stops:
        if processes <= 1:
            for job in jobs:
                try:
                    results[job] = _run(job)
                except Exception as exc:  # re-raised naming the run
                    raise _failed(job, exc) from exc
                stops.check()
                progress(results[job], len(results), len(jobs))
            return [results[job] for job in jobs]
        # No more processes than runs (and at least one: an empty list still gives its empty answer).
        workers = max(1, min(processes, len(jobs)))
        pool = ProcessPoolExecutor(max_workers=workers, initializer=start_worker, initargs=(os.getpid(),))
        try:
            with holding_back_stop_signals():  # every worker is started by the time all are queued
                futures: dict[Future[SimResult], Job] = {pool.submit(_run, job): job for job in jobs}
            for future in as_completed(futures):
                job = futures[future]
                try:
                    results[job] = future.result()
                except Exception as exc:  # re-raised naming the run
                    stops.check()  # a worker ended by the same signal broke the pool: that is the cause
                    raise _failed(job, exc) from exc
                stops.check()
                progress(results[job], len(results), len(jobs))
        except KeyboardInterrupt:  # `Interrupted` by a stop signal, or a plain Ctrl-C
            kill_workers(pool)  # a signal sent to the command alone must not wait for their runs
            raise
        finally:
            # On a failure or a stop the queued runs are dropped, not waited for (hours, in a sitting).
            pool.shutdown(wait=True, cancel_futures=True)
    return [results[job] for job in jobs]
