"""Benchmarks the service knows: names, task counts and subsets, for `clade bench list`."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from service.api.deps import Reader, ServicesDep

router = APIRouter(prefix="/api/benchmarks", tags=["benchmarks"], dependencies=[Reader])


@router.get("")
def list_benchmarks(services: ServicesDep) -> list[dict[str, Any]]:
    return services.catalog.describe()
