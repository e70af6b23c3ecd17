"""Agents over HTTP: seed import, children through the worker endpoints, reads and exports."""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.helpers import tar_names, tar_of, write_agent
from tests.servers import AppService
from tests.service.helpers import (
    CORE,
    add_evaluation,
    agent_ids,
    core_patch,
    open_step_in,
    refusal,
    row_counts,
    start_run,
)


def test_seed_import_and_reimport(service: AppService, seed_id: str, tmp_path: Path) -> None:
    with service.anonymous as reader:
        agent = reader.get(f"/api/agents/{seed_id}").json()
    assert agent["kind"] == "seed" and agent["parent_id"] is None
    assert agent["manifest"]["solve"] == "python -m tiny"
    assert agent["lineage"] == [seed_id]
    root = write_agent(tmp_path / "again", {"tiny/core.py": CORE})
    with service.admin as client:
        again = client.post("/api/seeds", files={"file": ("a.tgz", tar_of(root))})
        renamed = client.post("/api/seeds", files={"file": ("a.tgz", tar_of(root))}, data={"name": "other"})
    # The id is the code's: the same code again is the same agent (200, not created), first name kept.
    assert again.status_code == 200 and again.json()["id"] == seed_id
    assert renamed.status_code == 200 and renamed.json() == again.json()
    assert renamed.json()["name"] == "tiny"


def test_invalid_seed_is_refused_and_writes_nothing(service: AppService, tmp_path: Path) -> None:
    url = service.env["CLADE_DATABASE_URL"]
    no_manifest = tmp_path / "bad"
    (no_manifest / "src").mkdir(parents=True)
    (no_manifest / "src" / "x.py").write_text("x = 1\n")
    bad_manifest = write_agent(tmp_path / "bad2", {"agent.toml": 'name = "x"\n'})
    before = row_counts(url)
    with service.admin as client:
        missing = client.post("/api/seeds", files={"file": ("a.tgz", tar_of(no_manifest))})
        assert refusal(missing) == ([["body", "file"]], "agent.toml is missing at the agent's root")
        field = client.post("/api/seeds", files={"file": ("a.tgz", tar_of(bad_manifest))})
        assert "solve" in refusal(field)[1]
        garbage = client.post("/api/seeds", files={"file": ("a.tgz", b"not a tar at all")})
        assert "not a tar" in refusal(garbage)[1]
    assert row_counts(url) == before


def test_child_lifecycle_through_worker_endpoints(service: AppService, seed_id: str) -> None:
    url = service.env["CLADE_DATABASE_URL"]
    run_id = start_run(service, seed_id)
    step_id = open_step_in(url, run_id=run_id, parent_id=seed_id)
    patch = core_patch(10, "line ten, improved")
    usage = [
        {
            "purpose": "improve",
            "model": "scripted",
            "prompt_tokens": 100,
            "completion_tokens": 20,
            "cost_usd": 0.01,
        }
    ]
    with service.worker as worker:
        code = worker.get(f"/api/worker/agents/{seed_id}/code")
        assert code.status_code == 200
        assert "tiny/core.py" in tar_names(code.content)
        first = worker.post(f"/api/worker/steps/{step_id}/child", json={"patch": patch, "usage": usage})
        assert first.status_code == 200, first.text
        child = first.json()["id"]
        # A second delivery of the same step yields the same child and records nothing more.
        counts = row_counts(url)
        second = worker.post(f"/api/worker/steps/{step_id}/child", json={"patch": patch, "usage": usage})
        assert second.json()["id"] == child
        assert row_counts(url) == counts
    with service.anonymous as reader:
        detail = reader.get(f"/api/agents/{child}").json()
        assert detail["parent_id"] == seed_id and detail["lineage"] == [seed_id, child]
        assert detail["runs"][0]["status"] == "evaluating" and detail["runs"][0]["usd"] == 0.01
        diff = reader.get(f"/api/agents/{child}/diff").text
        assert "-line 10\n+line ten, improved" in diff
        lineage = reader.get(f"/api/runs/{run_id}/lineage").json()["nodes"]
        assert {(n["id"], n["parent_id"]) for n in lineage} == {(seed_id, None), (child, seed_id)}
        assert next(n for n in lineage if n["id"] == seed_id)["children"] == 1
        run = reader.get(f"/api/runs/{run_id}").json()
        assert run["progress"]["children"] == 1 and run["progress"]["tokens"] == 120
        seeds = reader.get("/api/agents", params={"kind": "seed"}).json()
        assert [a["id"] for a in seeds["items"]] == [seed_id]


def test_refused_patches_write_nothing(service: AppService, seed_id: str) -> None:
    url = service.env["CLADE_DATABASE_URL"]
    run_id = start_run(service, seed_id)
    step_id = open_step_in(url, run_id=run_id, parent_id=seed_id)
    before, agents_before = row_counts(url), agent_ids(url)
    with service.worker as worker:
        stale = core_patch(10, "x").replace("-line 10", "-line 99")
        refused = worker.post(f"/api/worker/steps/{step_id}/child", json={"patch": stale})
        locs, message = refusal(refused)
        assert locs == [["body", "patch"]] and "does not apply" in message
        huge = core_patch(10, "x" * (3 * 1024 * 1024))
        too_big = worker.post(f"/api/worker/steps/{step_id}/child", json={"patch": huge})
        assert too_big.status_code == 413
        assert worker.post("/api/worker/steps/unknown/child", json={"patch": "x"}).status_code == 404
    assert row_counts(url) == before and agent_ids(url) == agents_before
    refs = subprocess.run(
        ["git", "--git-dir", str(service.data_dir / "archive.git"), "for-each-ref", "--format=%(refname)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert refs == [f"refs/heads/agents/{seed_id}"]


def link_patch(path: str, target: str, mode: str = "120000") -> str:
    """A patch adding a symbolic link (or, with mode 160000, a submodule) at `path`."""
    content = target if mode == "120000" else f"Subproject commit {target}"
    return (
        f"diff --git a/{path} b/{path}\nnew file mode {mode}\n--- /dev/null\n+++ b/{path}\n"
        f"@@ -0,0 +1 @@\n+{content}\n\\ No newline at end of file\n"
    )


@pytest.mark.parametrize(
    ("patch", "named"),
    [
        (link_patch("link", "/etc/passwd"), "link"),
        (link_patch("tiny/up", "../../outside"), "tiny/up"),
        (link_patch("sub", "1234567890123456789012345678901234567890", mode="160000"), "sub"),
    ],
    ids=["absolute-link", "link-climbing-out", "submodule"],
)
def test_a_child_whose_links_lead_out_of_it_is_refused(
    service: AppService, seed_id: str, patch: str, named: str
) -> None:
    """Links that would make whoever unpacks the agent reach outside it are refused, as in seeds."""
    url = service.env["CLADE_DATABASE_URL"]
    step_id = open_step_in(url, run_id=start_run(service, seed_id), parent_id=seed_id)
    before, agents_before = row_counts(url), agent_ids(url)
    with service.worker as worker:
        locs, message = refusal(worker.post(f"/api/worker/steps/{step_id}/child", json={"patch": patch}))
        assert locs == [["body", "patch"]] and message.startswith(f"{named}: ")
        inside = worker.post(
            f"/api/worker/steps/{step_id}/child", json={"patch": link_patch("tiny/l", "core.py")}
        )
        assert inside.status_code == 200, inside.text  # a link within the agent is an ordinary file
    assert row_counts(url)["agents"] == before["agents"] + 1
    assert agent_ids(url) - agents_before == {inside.json()["id"]}


def test_step_rejection_is_recorded_with_reason(service: AppService, seed_id: str) -> None:
    url = service.env["CLADE_DATABASE_URL"]
    run_id = start_run(service, seed_id)
    step_id = open_step_in(url, run_id=run_id, parent_id=seed_id)
    with service.worker as worker:
        response = worker.post(f"/api/worker/steps/{step_id}/reject", json={"reason": "empty patch"})
        assert response.json() == {
            "id": step_id,
            "status": "rejected",
            "open": False,
            "reason": "empty patch",
            "worker_name": "local",
        }
        late = worker.post(f"/api/worker/steps/{step_id}/child", json={"patch": core_patch(3, "x")})
        assert late.status_code == 409


def test_exports(service: AppService, seed_id: str, tmp_path: Path) -> None:
    url = service.env["CLADE_DATABASE_URL"]
    run_id = start_run(service, seed_id)
    step_one = open_step_in(url, run_id=run_id, parent_id=seed_id)
    with service.worker as worker:
        one = worker.post(
            f"/api/worker/steps/{step_one}/child", json={"patch": core_patch(5, "five")}
        ).json()["id"]
        step_two = open_step_in(url, run_id=run_id, parent_id=one)
        two = worker.post(
            f"/api/worker/steps/{step_two}/child", json={"patch": core_patch(20, "twenty")}
        ).json()["id"]
    with service.anonymous as reader:
        exported = reader.get(f"/api/agents/{two}/export")
        assert exported.headers["content-type"] == "application/gzip"
        with tarfile.open(fileobj=io.BytesIO(exported.content)) as tar:
            prefix = f"agent-{two[:12]}"
            metadata = json.loads(tar.extractfile(f"{prefix}/metadata.json").read())  # type: ignore[union-attr]
            core = tar.extractfile(f"{prefix}/code/tiny/core.py").read().decode()  # type: ignore[union-attr]
        assert metadata["schema_version"] == 1 and metadata["lineage"] == [seed_id, one, two]
        assert metadata["runs"][0]["run_id"] == run_id and metadata["runs"][0]["config"]["rng_seed"] == 7
        assert "five\n" in core and "twenty\n" in core

        patches = reader.get(f"/api/agents/{two}/patches").text
        assert patches.count("Subject: [PATCH") == 2

        bundle = tmp_path / "two.bundle"
        bundle.write_bytes(reader.get(f"/api/agents/{two}/bundle").content)
        clone = tmp_path / "clone"
        subprocess.run(["git", "clone", "-q", str(bundle), str(clone)], check=True)
        log = subprocess.run(
            ["git", "-C", str(clone), "log", "--format=%H", two], capture_output=True, text=True, check=True
        ).stdout.split()
        assert log == [two, one, seed_id]

        code = reader.get(f"/api/agents/{one}/code")
        with tarfile.open(fileobj=io.BytesIO(code.content), mode="r:gz") as tar:
            assert f"agent-{one[:12]}/agent.toml" in tar.getnames()
        assert reader.get(f"/api/agents/{'f' * 40}").status_code == 404
        assert reader.get(f"/api/agents/{'f' * 40}/diff").status_code == 404
        top = reader.get(f"/api/runs/{run_id}/export", params={"k": 3})
        assert top.status_code == 200  # nothing is admitted until the loop scores agents
        with tarfile.open(fileobj=io.BytesIO(top.content), mode="r:gz") as tar:
            assert tar.getnames() == []


def test_evaluation_result_delivered_twice_is_recorded_once(service: AppService, seed_id: str) -> None:
    url = service.env["CLADE_DATABASE_URL"]
    run_id = start_run(service, seed_id)
    add_evaluation(url, run_id=run_id, agent_id=seed_id, evaluation_id="e1")
    body = {
        "result": {"resolved": True, "diff": "--- a/x\n+++ b/x\n", "durations": {"total_s": 3.5}},
        "usage": [
            {
                "purpose": "solve",
                "model": "scripted",
                "prompt_tokens": 7,
                "completion_tokens": 3,
                "cost_usd": 0.002,
            }
        ],
    }
    with service.worker as worker:
        first = worker.post("/api/worker/evaluations/e1/result", json=body)
        assert first.status_code == 200 and first.json()["resolved"] is True
        counts = row_counts(url)
        again = worker.post("/api/worker/evaluations/e1/result", json=body | {"result": {"resolved": False}})
        assert again.json()["resolved"] is True
        assert row_counts(url) == counts
        bad = worker.post("/api/worker/evaluations/e1/result", json={"result": {"resolved": "maybe"}})
        assert bad.status_code == 422
    with service.anonymous as reader:
        detail = reader.get(f"/api/agents/{seed_id}/evaluations/e1").json()
        assert detail["result"]["durations"]["total_s"] == 3.5 and detail["prompt_tokens"] == 7
        assert reader.get(f"/api/runs/{run_id}").json()["progress"]["usd"] == 0.002
        # The agent's results as SWE-bench predictions JSONL (what the official harness reads).
        predictions = reader.get(f"/api/runs/{run_id}/predictions", params={"agent": seed_id})
        assert predictions.status_code == 200
        lines = [json.loads(line) for line in predictions.text.splitlines()]
        assert lines == [
            {
                "instance_id": "clade-mini__textkit-1",
                "model_name_or_path": f"clade-agent-{seed_id[:12]}",
                "model_patch": "--- a/x\n+++ b/x\n",
            }
        ]
        # The same as SWE-bench Pro's patches file (swe_bench_pro_eval.py --patch_path).
        pro = reader.get(
            f"/api/runs/{run_id}/predictions", params={"agent": seed_id, "format": "swebench-pro"}
        )
        assert pro.status_code == 200 and pro.headers["content-type"] == "application/json"
        assert pro.json() == [
            {
                "instance_id": "clade-mini__textkit-1",
                "patch": "--- a/x\n+++ b/x\n",
                "prefix": f"clade-agent-{seed_id[:12]}",
            }
        ]


def test_a_tampered_evaluation_is_never_resolved_and_is_listed_as_tampered(
    service: AppService, seed_id: str
) -> None:
    url = service.env["CLADE_DATABASE_URL"]
    run_id = start_run(service, seed_id)
    add_evaluation(url, run_id=run_id, agent_id=seed_id, evaluation_id="e-forged")
    evidence = "the must-fail canary test_keeps_order was reported PASSED"
    dropped = {"conftest.py": "conftest.py: pytest loads it as a plugin"}
    forged = {"resolved": True, "tampered": evidence, "dropped_for_grading": dropped}
    with service.worker as worker:
        refused = worker.post("/api/worker/evaluations/e-forged/result", json={"result": forged})
        assert refused.status_code == 422  # a worker cannot record a tampered pass
        recorded = worker.post(
            "/api/worker/evaluations/e-forged/result", json={"result": forged | {"resolved": False}}
        )
        assert recorded.status_code == 200, recorded.text
    with service.anonymous as reader:
        agent = reader.get(f"/api/agents/{seed_id}").json()
        [row] = [e for run in agent["runs"] for e in run["evaluations"] if e["id"] == "e-forged"]
        assert row["resolved"] is False and row["tampered"] is True
        assert row["dropped_for_grading"] == ["conftest.py"]
        detail = reader.get(f"/api/agents/{seed_id}/evaluations/e-forged").json()
        assert detail["result"]["tampered"] == evidence
        assert detail["result"]["dropped_for_grading"] == dropped
