"""Schemathesis over the OpenAPI document against a live service, on SQLite and on Postgres.

Every phase runs (the document's examples, coverage of each schema's edges, fuzzing, and
stateful sequences along the links schemathesis infers), with a fixed seed and a fixed
number of examples per operation, authenticated with the service's own tokens. Checks: no
server error, every answer's status and media type are listed in the document for its operation,
and every body matches the schema listed for its status.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from tests.helpers import tar_of, write_agent
from tests.servers import ServiceProcess, service_env, start_service
from tests.service.helpers import CORE, add_evaluation, core_patch, open_step_in

SEED = 20261130
# The suite's budget; CLADE_SCHEMATHESIS_EXAMPLES runs a deeper sitting with the same checks.
EXAMPLES = int(os.environ.get("CLADE_SCHEMATHESIS_EXAMPLES", "15"))
CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"


def archive_with_data(service: ServiceProcess, tmp_path: Path) -> dict[str, list[str]]:
    """A seed, a run, a child, an open step and a pending evaluation: ids for the fuzzer to use,
    so that requests reach past the 404s."""
    url = service.database_url
    with service.admin as admin:
        root = write_agent(tmp_path / "seed", {"tiny/core.py": CORE})
        seed = admin.post("/api/seeds", files={"file": ("a.tgz", tar_of(root))}).json()["id"]
        run = admin.post("/api/runs", json={"seed_agent": seed}).json()["id"]
    step = open_step_in(url, run_id=run, parent_id=seed)
    with service.worker as worker:
        child = worker.post(f"/api/worker/steps/{step}/child", json={"patch": core_patch(5, "x")}).json()[
            "id"
        ]
    open_step = open_step_in(url, run_id=run, parent_id=child)
    add_evaluation(url, run_id=run, agent_id=child, evaluation_id="0" * 32)
    # A dataset file that loads at once, and one that does not exist: a dataset *name* would
    # be looked up on the Hub, seconds per request even offline.
    dataset = tmp_path / "instances.jsonl"
    dataset.write_text(json.dumps({"instance_id": "a__b-1", "repo": "a/b", "base_commit": "0"}) + "\n")
    return {
        "agents": [seed, child],
        "runs": [run],
        "steps": [open_step],
        "evaluations": ["0" * 32],
        "datasets": [str(dataset), str(tmp_path / "missing.jsonl")],
    }


def config_text(service: ServiceProcess, ids: dict[str, list[str]]) -> str:
    secrets = service.secrets
    lines = [
        f"seed = {SEED}",
        "[cache]",
        "enabled = false",  # nothing from one run steers the next: the figures stay comparable
        "[generation]",
        f"max-examples = {EXAMPLES}",
        "[headers]",
        f'Authorization = "Bearer {secrets["admin_token"]}"',
    ]
    for name, values in ids.items():
        lines += [f"[dictionaries.{name}]", f"values = {json.dumps(values)}"]
    bindings = {
        "path.agent_id": "agents",
        "query.agent": "agents",
        "body.seed_agent": "agents",
        "path.run_id": "runs",
        "path.step_id": "steps",
        "path.evaluation_id": "evaluations",
    }
    lines.append("[parameters]")
    lines += [f'"{key}" = {{ dictionary = "{name}", probability = 0.5 }}' for key, name in bindings.items()]
    lines.append('"body.benchmark.options.dataset" = { dictionary = "datasets" }')
    # Reads with the read token, worker endpoints with the worker's, the rest with the admin's.
    # The coverage phase does not take the dataset dictionary above, so it leaves out the one
    # endpoint that would look dataset names up on the Hub.
    lines += [
        "[[operations]]",
        'include-tag = "worker"',
        f'headers = {{ Authorization = "Bearer {secrets["worker_token"]}" }}',
        "[[operations]]",
        'include-name-regex = "^GET /api/(runs|agents|benchmarks)"',
        f'headers = {{ Authorization = "Bearer {secrets["read_token"]}" }}',
        "[[operations]]",
        'include-path = "/api/benchmarks/tasks"',
        "phases.coverage.enabled = false",
    ]
    return "\n".join(lines) + "\n"


def failed_checks(report: Path) -> Counter[str]:
    """How many times each check failed, from schemathesis's NDJSON event stream."""
    failed: Counter[str] = Counter()
    for line in report.read_text().splitlines():
        scenario = json.loads(line).get("ScenarioFinished")
        if scenario is None:
            continue
        for checks in (scenario["recorder"].get("checks") or {}).values():
            failed.update(check["name"] for check in checks if check["status"] == "failure")
    return failed


def test_schemathesis_finds_no_server_error_and_no_schema_violation(
    database_url: str, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    env = service_env(
        tmp_path / "data", database_url, 0, CLADE_READS_REQUIRE_TOKEN="true", HF_HUB_OFFLINE="1"
    )
    service = start_service(env)
    try:
        config = tmp_path / "schemathesis.toml"
        config.write_text(config_text(service, archive_with_data(service, tmp_path)))
        har, report = tmp_path / "requests.har", tmp_path / "report.ndjson"
        command = [
            *(sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "--no-color"),
            *("run", f"{service.url}/openapi.json", "--checks", CHECKS, "--workers", "1"),
            *("--report", "har,ndjson", "--report-har-path", str(har), "--report-ndjson-path", str(report)),
        ]
        # Run from tmp_path: schemathesis keeps its own files in the working folder.
        result = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=300 * max(1, EXAMPLES // 15),
            check=False,
            cwd=tmp_path,
        )
    finally:
        service.stop()
    entries = json.loads(har.read_text())["log"]["entries"]
    server_errors = sum(1 for entry in entries if entry["response"]["status"] >= 500)
    failed = failed_checks(report)
    violations = failed["response_schema_conformance"]
    database = "postgres" if database_url.startswith("postgresql") else "sqlite"
    for name, value in (
        ("requests", len(entries)),
        ("server_errors", server_errors),
        ("violations", violations),
    ):
        record_property(f"schemathesis_{database}_{name}", value)
    print(
        f"schemathesis on {database}: {len(entries)} requests, {server_errors} server errors, "
        f"{violations} schema violations (seed {SEED}, {EXAMPLES} examples per operation); "
        + " ".join(line.strip() for line in result.stdout.splitlines() if "API Links" in line)
    )
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-2000:]
    assert server_errors == 0 and not failed
    assert len(entries) > 1000  # every phase ran against every operation
