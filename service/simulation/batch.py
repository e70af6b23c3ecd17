"""Many simulated runs (presets x landscapes x seeds), in worker processes, reported as they end."""

from __future__ import annotations

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


def _run(job: Job) -> SimResult:
    return simulate(get_preset(job.preset), job.landscape, job.seed, job.budget)


def run_all(
    jobs: Sequence[Job], *, processes: int, progress: Callable[[SimResult, int, int], None]
) -> list[SimResult]:
    """Every job's result, in the order of `jobs`; `progress(result, done, total)` as each ends."""
    results: dict[Job, SimResult] = {}
    if processes <= 1:
        for job in jobs:
            results[job] = _run(job)
            progress(results[job], len(results), len(jobs))
    else:
        with ProcessPoolExecutor(max_workers=processes) as pool:
            futures: dict[Future[SimResult], Job] = {pool.submit(_run, job): job for job in jobs}
            for future in as_completed(futures):
                results[futures[future]] = future.result()
                progress(results[futures[future]], len(results), len(jobs))
    return [results[job] for job in jobs]
