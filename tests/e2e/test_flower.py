"""Operators' views of a cluster on Redis: Flower sees the workers, the service's /metrics the queue."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.conftest import Cluster, wait_for
from tests.servers import on_a_free_port
from worker.curriculum import Curriculum


def test_flower_lists_a_worker_and_metrics_read_the_redis_queue(
    cluster_factory: Callable[[Curriculum], Cluster], tmp_path: Path
) -> None:
    cluster = cluster_factory(Curriculum())
    cluster.start_worker("flower")
    # As compose.yaml runs it; the API answers without a login only when told to (Flower 2).
    env = os.environ | {"FLOWER_UNAUTHENTICATED_API": "true"}

    def start(port: int) -> subprocess.Popen[bytes]:
        with (tmp_path / "flower.log").open("ab") as log:
            return subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    f"--broker={cluster.broker_url}",
                    "flower",
                    f"--port={port}",
                    "--address=127.0.0.1",
                ],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def answers(port: int) -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/healthcheck", timeout=10).status_code == 200
        except httpx.TransportError:
            return False

    flower, port = on_a_free_port(start, answers, "Flower")
    try:

        def workers() -> list[str]:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/api/workers?refresh=1", timeout=10)
            except httpx.TransportError:
                return []
            return sorted(response.json()) if response.status_code == 200 else []

        names = wait_for(workers, 180, "Flower to list the worker", cluster)
    finally:
        flower.terminate()
        flower.wait(timeout=30)
    assert any(name.startswith(f"{cluster.owner('flower')}@") for name in names), names

    with cluster.service.anonymous as client:
        text = client.get("/metrics").text
    found = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert found[("clade_broker_up", ())] == 1
    assert found[("clade_queue_depth", (("queue", "clade"),))] == 0
