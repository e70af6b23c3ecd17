"""Benchmarks the service knows: names, task counts and subsets, for `clade bench list`."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from contracts.benchmark_options import BenchmarkChoice
from service.api.deps import AdminOnly, Reader, ServicesDep
from service.api.responses import error_responses
from service.api.routes import CheckedRoute
from service.api.schemas import BenchmarkTasks
from service.plan import load_benchmark

router = APIRouter(prefix="/api/benchmarks", tags=["benchmarks"], route_class=CheckedRoute)


@router.get("", dependencies=[Reader], responses=error_responses(401))
def list_benchmarks(services: ServicesDep) -> list[dict[str, Any]]:
    return services.catalog.describe()


# Admin only: options may point the service at any dataset file or folder it can read.
@router.post("/tasks", dependencies=[AdminOnly], responses=error_responses(401, 413, 422))
def benchmark_tasks(choice: BenchmarkChoice, services: ServicesDep) -> BenchmarkTasks:
    """The tasks and subsets of a benchmark with the given options (422 naming a wrong option)."""
    benchmark = load_benchmark(services.catalog, choice.benchmark)
    return BenchmarkTasks(
        name=benchmark.name,
        tasks=[task.instance_id for task in benchmark.tasks()],
        subsets=benchmark.subsets(),
    )
