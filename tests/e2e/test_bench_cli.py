"""`clade --json bench run` against a whole Clade: stdout is one JSON document."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable

from tests.e2e.conftest import SEED_AGENT, Cluster
from tests.helpers import tar_of
from worker.curriculum import Curriculum

RESOLVED = "clade-mini__textkit-1"
TASKS = ["clade-mini__textkit-1", "clade-mini__spanlib-1", "clade-mini__ledger-1", "clade-mini__calcpy-1"]


def test_json_bench_run_prints_one_document(cluster_factory: Callable[..., Cluster]) -> None:
    cluster = cluster_factory(Curriculum(seed=[RESOLVED]))
    cluster.start_worker("bench")
    with cluster.service.admin as client:
        seed = client.post("/api/seeds", files={"file": ("seed.tgz", tar_of(SEED_AGENT))}).json()["id"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLADE_")}
    env |= {
        "CLADE_SERVICE_URL": cluster.service.url,
        "CLADE_ADMIN_TOKEN": cluster.service.secrets["admin_token"],
        "CLADE_DATA_DIR": str(cluster.root / "cli"),
    }
    command = ["--json", "bench", "run", "clade-mini", "--agent", seed, "--subset", "mini-5"]
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", *command],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr + cluster.worker_logs()
    scored = json.loads(done.stdout)  # nothing before or after the document
    assert scored["total"] == 5 and scored["resolved"] == 1
    assert {e["task_id"]: e["resolved"] for e in scored["evaluations"]}[RESOLVED] is True
    assert set(TASKS) <= {e["task_id"] for e in scored["evaluations"]}
