"""A hub and two worker hosts on separate networks (Linux network namespaces, see `netns`), each
with a worker token of its own issued by the admin: a run with parallelism 4 completes with jobs
done on both hosts, each answer names the token of the host that sent it, and each host's sandboxes
carry its worker's owner label and the stamp of one of its own processes."""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from benchmarks.registry import get_benchmark
from sandbox.base import OWNER_LABEL, ROLE_LABEL
from sandbox.liveness import HOST_LABEL, PID_LABEL
from tests.e2e.conftest import SEED_AGENT
from tests.e2e.docker_events import ContainerCreations
from tests.e2e.netns import SUBNET, NetnsCluster, namespace_inode, netns_cluster
from tests.helpers import tar_of
from worker.curriculum import Curriculum, build_script

pytestmark = [pytest.mark.docker, pytest.mark.xdist_group("netns")]
A, B = "clade-mini__textkit-1", "clade-mini__spanlib-1"
JOB_LINE = re.compile(r"clade\.worker\] (step|evaluation) \S+")


@pytest.fixture
def cluster(base_image: str) -> Iterator[NetnsCluster]:
    script = build_script(get_benchmark("clade-mini").tasks(), Curriculum(seed=[A], gen1=[B]))
    with netns_cluster(script, workers=2, concurrency=2) as started:
        yield started


def run_state(cluster: NetnsCluster, run_id: str) -> dict[str, Any]:
    # The service listens on the hub's address, not loopback: reads need the read token.
    anonymous = cluster.request("GET", f"/api/runs/{run_id}", token=None)
    assert anonymous.status_code == 401, anonymous.text
    return dict(cluster.request("GET", f"/api/runs/{run_id}", token="read_token").json())


def run_on_two_hosts(cluster: NetnsCluster) -> dict[str, Any]:
    """A run with parallelism 4 on the hub, until it ends; its last state."""
    seed = cluster.request("POST", "/api/seeds", files={"file": ("seed.tgz", tar_of(SEED_AGENT))})
    assert seed.status_code == 201, seed.text
    config = {
        "name": "two-hosts",
        "seed_agent": seed.json()["id"],
        "benchmark": {"name": "clade-mini"},
        "stages": [{"tasks": [A]}],
        "selection": {"strategy": "best"},
        "budget": {"max_children": 4},
        "limits": {
            "solve_timeout_s": 60,
            "improve_timeout_s": 60,
            "test_timeout_s": 60,
            "overhead_s": 30,
            "max_agent_steps": 6,
        },
        "parallelism": 4,
    }
    created = cluster.request("POST", "/api/runs", json=config)
    assert created.status_code == 201, created.text
    run_id = created.json()["id"]
    deadline = time.monotonic() + 240
    while (state := run_state(cluster, run_id))["status"] not in ("completed", "failed", "cancelled"):
        assert time.monotonic() < deadline, f"the run did not finish in time\n{cluster.logs()}"
        time.sleep(0.5)
    return state


def test_a_run_spreads_over_two_worker_hosts(cluster: NetnsCluster, docker_client: Any) -> None:
    with ContainerCreations(docker_client, f"{ROLE_LABEL}=sandbox") as creations:
        state = run_on_two_hosts(cluster)
    assert state["status"] == "completed", f"{state}\n{cluster.logs()}"
    assert state["stop_reason"].startswith("budget: max_children reached (4 of 4 steps attempted")

    # Both hosts did jobs, and each answer names the worker token of the host that sent it.
    for host in cluster.workers:
        assert JOB_LINE.search(host.log()), f"{host.name} did no job\n{cluster.logs()}"
    events = cluster.request("GET", f"/api/runs/{state['id']}/events", params={"limit": 1000}).json()
    answered = [e["payload"] for e in events if e["kind"] in ("evaluation_done", "child_created")]
    names = {p.get("worker") for p in answered if not p.get("reused_from")}
    assert names and names <= {host.name for host in cluster.workers}, f"{answered}"

    # Every sandbox of the run: made by a process of the host whose owner label it carries.
    by_owner = {host.owner: host for host in cluster.workers}
    labels = [found for found in creations.seen() if found.get(OWNER_LABEL) in by_owner]
    assert {found[OWNER_LABEL] for found in labels} == set(by_owner), f"{labels}\n{cluster.logs()}"
    for found in labels:
        host = by_owner[found[OWNER_LABEL]]
        assert found[HOST_LABEL] == host.hostname
        pid = int(found[PID_LABEL])  # a pool process of that host's worker, still running
        assert os.stat(f"/proc/{pid}/ns/net").st_ino == namespace_inode(host.namespace)
    leftovers = docker_client.api.containers(
        all=True, filters={"label": [f"{OWNER_LABEL}={o}" for o in by_owner]}
    )
    assert leftovers == []

    # A worker host had nothing but the hub's subnet, and nothing listening on it.
    for host in cluster.workers:
        routes = subprocess.run(
            ["ip", "-n", host.namespace, "route"], capture_output=True, text=True, check=True
        )
        assert routes.stdout.split()[0] == f"{SUBNET}.0/24" and len(routes.stdout.splitlines()) == 1
        listening = subprocess.run(
            ["ip", "netns", "exec", host.namespace, "ss", "-Hltnu"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert listening.stdout.strip() == ""
