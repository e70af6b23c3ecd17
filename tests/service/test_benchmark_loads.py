"""Benchmark loads: one configuration's long load stalls nothing else, and no request waits long."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.base import Benchmark
from benchmarks.catalog import BenchmarkCatalog, BenchmarkLoadPending
from benchmarks.clade_mini import CladeMini
from benchmarks.folder.options import FolderOptions
from benchmarks.registry import BenchmarkRegistry, benchmark_config
from benchmarks.spec import BenchmarkSpec, LoadContext
from tests.servers import AppService
from tests.service.helpers import config


@pytest.fixture
def slow_folder(tmp_path: Path) -> Iterator[threading.Event]:
    """Set to let the loads of `slow_registry`'s `folder` benchmark end."""
    release = threading.Event()
    try:
        yield release
    finally:
        release.set()


def slow_registry(release: threading.Event) -> BenchmarkRegistry:
    """The installed benchmarks, `folder` replaced by one whose load waits until `release` is set."""

    def slow(_options: FolderOptions, _context: LoadContext) -> Benchmark:
        release.wait(120)
        return CladeMini()

    return BenchmarkRegistry.installed().with_specs(BenchmarkSpec("folder", FolderOptions, slow))


def test_a_long_load_holds_no_lock_and_no_caller_past_its_wait(
    slow_folder: threading.Event, tmp_path: Path
) -> None:
    catalog = BenchmarkCatalog(wait_s=0.2, registry=slow_registry(slow_folder))
    slow = benchmark_config("folder", {"path": str(tmp_path)})
    with pytest.raises(BenchmarkLoadPending, match="clade bench prepare folder"):
        catalog.get(slow)
    # The slow load still runs (its event is not set), and other configurations load meanwhile.
    assert len(catalog.get(benchmark_config("clade-mini")).tasks()) > 0
    assert any(entry["name"] == "clade-mini" and entry["tasks"] for entry in catalog.describe())
    assert not slow_folder.is_set()
    slow_folder.set()
    deadline = time.monotonic() + 60
    while True:  # the load went on: once done, it is kept and answered at once
        try:
            benchmark = catalog.get(slow)
            break
        except BenchmarkLoadPending:
            assert time.monotonic() < deadline, "the load did not finish once released"
    assert catalog.get(slow) is benchmark


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_named_dataset_is_never_downloaded_inside_a_request(service: AppService, seed_id: str) -> None:
    body = config(seed_id) | {"benchmark": {"name": "swebench", "options": {"dataset": "0"}}}
    body["stages"] = [{"subset": "all"}]
    with service.admin as admin:
        response = admin.post("/api/runs/plan", json=body)
        listing = admin.get("/api/benchmarks")
    assert response.status_code in (422, 503), response.text
    assert "clade bench prepare" in response.text, response.text
    assert listing.status_code == 200


def test_without_a_wait_the_caller_loads_and_others_share_its_load(
    slow_folder: threading.Event, tmp_path: Path
) -> None:
    """A worker's catalog: no loader threads, still no lock across a load."""
    catalog = BenchmarkCatalog(registry=slow_registry(slow_folder))
    slow = benchmark_config("folder", {"path": str(tmp_path)})
    got: list[Benchmark] = []
    callers = [threading.Thread(target=lambda: got.append(catalog.get(slow))) for _ in range(2)]
    for caller in callers:
        caller.start()
    assert len(catalog.get(benchmark_config("clade-mini")).tasks()) > 0
    assert not slow_folder.is_set() and got == []
    slow_folder.set()
    for caller in callers:
        caller.join(60)
    assert len(got) == 2 and got[0] is got[1]
