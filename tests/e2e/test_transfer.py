"""`clade agent transfer` against a whole Clade (service, Celery worker, Docker sandboxes, the
scripted model standing in for the remote LLM): an agent re-scored on two solving models.

The scripted server answers under several names: `scripted-weak` has a rule of its own that
fixes nothing; `scripted-strong` follows the curriculum (the seed resolves RESOLVED);
`scripted-gone` is refused (404 model_not_found), so a run that names it first solves with its
fallback, `scripted-strong`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable

from tests.e2e.conftest import SEED_AGENT, Cluster
from tests.helpers import tar_of
from worker.curriculum import Curriculum
from worker.llm.script import Match, Reply, Rule, Script

RESOLVED = "clade-mini__textkit-1"
UNRESOLVED = "clade-mini__spanlib-1"
STRONG, WEAK, GONE = "scripted-strong", "scripted-weak", "scripted-gone"


def two_models(script: Script) -> Script:
    blind = Rule(
        name="weak-model-fixes-nothing",
        match=Match(model=f"^{WEAK}$"),
        reply=Reply(content="(scripted weak model) I could not find the cause."),
    )
    return script.model_copy(update={"rules": [blind, *script.rules], "refuse_models": [GONE]})


def clade(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLADE_")}
    env |= {
        "CLADE_SERVICE_URL": cluster.service.url,
        "CLADE_ADMIN_TOKEN": cluster.service.secrets["admin_token"],
        "CLADE_DATA_DIR": str(cluster.root / "cli"),
        "COLUMNS": "200",  # the table's rows on one line each
    }
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args], env=env, capture_output=True, text=True, timeout=900
    )


def test_agent_transfer_scores_an_agent_on_two_models(cluster_factory: Callable[..., Cluster]) -> None:
    cluster = cluster_factory(Curriculum(seed=[RESOLVED]), script_edit=two_models)
    cluster.start_worker("transfer")
    with cluster.service.admin as client:
        seed = client.post("/api/seeds", files={"file": ("seed.tgz", tar_of(SEED_AGENT))}).json()["id"]
    tasks = ["--task", RESOLVED, "--task", UNRESOLVED]
    done = clade(cluster, "agent", "transfer", seed, "--model", f"{GONE},{STRONG}", "--model", WEAK, *tasks)
    assert done.returncode == 0, done.stdout + done.stderr + cluster.worker_logs()
    lines = done.stdout.splitlines()
    strong = next(line for line in lines if f"{GONE} > {STRONG}" in line)
    weak = next(line for line in lines if WEAK in line and GONE not in line)
    assert "1/2" in strong and "0.50 [0.09, 0.91]" in strong, done.stdout
    assert "0/2" in weak and "0.00 [0.00, 0.66]" in weak, done.stdout

    with cluster.service.admin as client:
        table = client.get(f"/api/agents/{seed}/transfer")
        assert table.status_code == 200, table.text
        rows = {row["model"]: row for row in table.json()["rows"]}
        assert set(rows) == {GONE, WEAK}
        fell_back, blind = rows[GONE], rows[WEAK]
        assert fell_back["fallbacks"] == [STRONG] and blind["fallbacks"] == []
        assert (fell_back["resolved"], fell_back["total"], fell_back["rate"]) == (1, 2, 0.5)
        assert (blind["resolved"], blind["total"], blind["rate"]) == (0, 2, 0.0)
        assert fell_back["low"] < 0.5 < fell_back["high"] and blind["low"] == 0.0
        assert all(row["usd"] > 0 and row["tokens"] > 0 and row["running"] == 0 for row in rows.values())
        assert [row["model"] for row in table.json()["rows"]] == [GONE, WEAK]  # best rate first
        one = client.get(f"/api/agents/{seed}/transfer", params={"model": WEAK}).json()["rows"]
        assert [row["model"] for row in one] == [WEAK]
        unknown = client.get(f"/api/agents/{seed}/transfer", params={"model": "gpt-none"})
        assert unknown.status_code == 404 and unknown.json()["detail"].startswith("model:")
        assert client.get(f"/api/agents/{'0' * 40}/transfer").status_code == 404

    missing = clade(cluster, "agent", "transfer", "f" * 40, "--model", WEAK)
    assert missing.returncode == 1 and "AGENT: no agent" in missing.stderr
    spaced = clade(cluster, "agent", "transfer", seed, "--model", "two words", *tasks)
    assert spaced.returncode == 1 and "models.solve" in spaced.stderr, spaced.stderr
