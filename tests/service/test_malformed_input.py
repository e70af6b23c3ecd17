"""Malformed input gets a clear 4xx naming what is wrong, and writes nothing, on SQLite and Postgres."""

from __future__ import annotations

import io
import json
import re
import subprocess
import tarfile
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from contracts.text import storable
from service.db.models import Agent
from tests.helpers import tar_of, write_agent
from tests.servers import AppService
from tests.service.helpers import (
    add_evaluation,
    agent_refs,
    core_patch,
    open_step_in,
    refusal,
    row_counts,
    start_run,
)

HUGE = 2**63
USAGE = {"purpose": "solve", "model": "scripted", "prompt_tokens": 7, "completion_tokens": 3, "cost_usd": 0.1}


def test_unstorable_text_is_refused_at_its_field(service: AppService, seed_id: str, tmp_path: Path) -> None:
    """NUL (PostgreSQL text cannot hold it) and lone surrogates (no UTF-8 exists for them)."""
    url = service.env["CLADE_DATABASE_URL"]
    run_id = start_run(service, seed_id)
    step_id = open_step_in(url, run_id=run_id, parent_id=seed_id)
    add_evaluation(url, run_id=run_id, agent_id=seed_id, evaluation_id="e1")
    before, refs = row_counts(url), agent_refs(service.data_dir)
    other = tar_of(write_agent(tmp_path / "other", {"other.py": "x = 1\n"}))
    with service.admin as admin, service.worker as worker:
        seed = admin.post("/api/seeds", files={"file": ("a.tgz", other)}, data={"name": "a\x00b"})
        assert refusal(seed)[0] == [["body", "name"]]
        run = admin.post("/api/runs", json={"seed_agent": seed_id, "name": "run\x00"})
        assert refusal(run)[0] == [["body", "name"]]
        models = admin.post("/api/runs", json={"seed_agent": seed_id, "models": {"solve": "gpt\x00"}})
        assert refusal(models)[0] == [["body", "models", "solve"]]
        # A lone surrogate, escaped as JSON allows: a valid document whose string has no UTF-8.
        surrogate = admin.post(
            "/api/runs",
            content=f'{{"seed_agent": "{seed_id}", "name": "\\ud800"}}',
            headers={"Content-Type": "application/json"},
        )
        locs, message = refusal(surrogate)
        assert locs == [["body", "name"]] and "surrogate" in message
        reason = worker.post(f"/api/worker/steps/{step_id}/reject", json={"reason": "bad\x00"})
        assert refusal(reason)[0] == [["body", "reason"]]
        diagnosis = worker.post(
            f"/api/worker/steps/{step_id}/child",
            json={"patch": core_patch(3, "x"), "diagnosis": "d\x00", "usage": [USAGE | {"model": "m\x00"}]},
        )
        assert refusal(diagnosis)[0] == [["body", "diagnosis"], ["body", "usage", 0, "model"]]
        log = worker.post(
            "/api/worker/evaluations/e1/result", json={"result": {"resolved": True, "agent_log": "\x00"}}
        )
        assert refusal(log)[0] == [["body", "result", "agent_log"]]
        status = admin.get(f"/api/runs/{run_id}/agents", params={"status": "a\x00"})
        assert refusal(status)[0] == [["query", "status"]]
        assert refusal(admin.get("/api/agents/a%00b"))[0] == [["path", "agent_id"]]
        assert refusal(admin.get(f"/api/agents/{seed_id}/evaluations/e%00"))[0] == [["path", "evaluation_id"]]
        # Not UTF-8 at all, and NaN (JSON has no NaN; it could not be sent back).
        latin = admin.post(
            "/api/runs", content=b'{"name": "\xe9"}', headers={"Content-Type": "application/json"}
        )
        assert refusal(latin)[0] == [["body"]]
        nan = worker.post(
            "/api/worker/evaluations/e1/result",
            content='{"result": {"resolved": true, "durations": {"total_s": NaN}}}',
            headers={"Content-Type": "application/json"},
        )
        assert refusal(nan)[0] == [["body", "result", "durations", "total_s"]]
        # Nesting: a few hundred levels is more than pydantic stores, a few thousand more than
        # Python's parser takes; both are refused whole.
        for depth in (500, 5000):
            deep = {"result": {"resolved": True, "trajectory": "[" * depth + "]" * depth}}
            body = json.dumps(deep).replace(f'"{"[" * depth}{"]" * depth}"', "[" * depth + "]" * depth)
            nested = worker.post(
                "/api/worker/evaluations/e1/result",
                content=body,
                headers={"Content-Type": "application/json"},
            )
            assert refusal(nested) == ([["body"]], "the body is nested more than 64 levels deep")
    with service.anonymous as reader:
        assert reader.get("/%00").status_code == 404
        assert reader.get("/runs/%00").status_code == 404
    assert row_counts(url) == before and agent_refs(service.data_dir) == refs


def test_bounds_are_what_the_database_holds(service: AppService, seed_id: str) -> None:
    url = service.env["CLADE_DATABASE_URL"]
    run_id = start_run(service, seed_id)
    add_evaluation(url, run_id=run_id, agent_id=seed_id, evaluation_id="e1")
    step_id = open_step_in(url, run_id=run_id, parent_id=seed_id)
    lists = {
        "/api/agents": "offset",
        "/api/runs": "offset",
        f"/api/runs/{run_id}/agents": "offset",
        f"/api/runs/{run_id}/events": "after",
    }
    with service.anonymous as reader:
        for path, name in lists.items():
            assert refusal(reader.get(path, params={name: HUGE}))[0] == [["query", name]], path
            assert reader.get(path, params={name: HUGE - 1}).status_code == 200, path
    before = row_counts(url)
    with service.worker as worker:
        for tokens in (HUGE, 2**31, 1_000_000_001):
            usage = [USAGE | {"prompt_tokens": tokens}]
            result = worker.post(
                "/api/worker/evaluations/e1/result", json={"result": {"resolved": True}, "usage": usage}
            )
            assert refusal(result)[0] == [["body", "usage", 0, "prompt_tokens"]]
            child = worker.post(
                f"/api/worker/steps/{step_id}/child", json={"patch": core_patch(3, "x"), "usage": usage}
            )
            assert refusal(child)[0] == [["body", "usage", 0, "prompt_tokens"]]
        # A cost whose sums would reach infinity, which no JSON answer could carry.
        costly = [USAGE | {"cost_usd": 1e308}] * 2
        result = worker.post(
            "/api/worker/evaluations/e1/result", json={"result": {"resolved": True}, "usage": costly}
        )
        assert refusal(result)[0] == [["body", "usage", 0, "cost_usd"], ["body", "usage", 1, "cost_usd"]]
        # Each call within bounds, their sum not: an evaluation's totals must fit their column too.
        many = [USAGE | {"completion_tokens": 1_000_000_000}] * 3
        result = worker.post(
            "/api/worker/evaluations/e1/result", json={"result": {"resolved": True}, "usage": many}
        )
        assert refusal(result)[0] == [["body", "usage"]]
        # Prompt and completion each fit, together not: a lease keeps their sum.
        both = [USAGE | {"prompt_tokens": 1_000_000_000, "completion_tokens": 1_000_000_000}] * 2
        child = worker.post(
            f"/api/worker/steps/{step_id}/child", json={"patch": core_patch(3, "x"), "usage": both}
        )
        assert refusal(child)[0] == [["body", "usage"]]
        assert "tokens add up to 4000000000" in refusal(child)[1]
    assert row_counts(url) == before


def test_manifest_fields_the_archive_cannot_hold_are_refused(service: AppService, tmp_path: Path) -> None:
    url = service.env["CLADE_DATABASE_URL"]
    long_name = write_agent(
        tmp_path / "long", {"agent.toml": f'name = "{"n" * 201}"\nsolve = "python -m tiny"\n'}
    )
    nul_name = write_agent(tmp_path / "nul", {"agent.toml": 'name = "a\\u0000b"\nsolve = "python -m tiny"\n'})
    before = row_counts(url)
    with service.admin as admin:
        for root in (long_name, nul_name):
            locs, message = refusal(admin.post("/api/seeds", files={"file": ("a.tgz", tar_of(root))}))
            assert locs == [["body", "file"]] and "agent.toml: name" in message
    assert row_counts(url) == before and agent_refs(service.data_dir) == set()


def test_child_that_deletes_every_file_is_refused(service: AppService, seed_id: str) -> None:
    url = service.env["CLADE_DATABASE_URL"]
    run_id = start_run(service, seed_id)
    step_id = open_step_in(url, run_id=run_id, parent_id=seed_id)
    with service.worker as worker:
        code = worker.get(f"/api/worker/agents/{seed_id}/code").content
    with tarfile.open(fileobj=io.BytesIO(code)) as tar:
        files = {m.name: tar.extractfile(m).read().decode() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]
    deletion = "".join(
        f"--- a/{name}\n+++ /dev/null\n@@ -1,{len(text.splitlines())} +0,0 @@\n"
        + "".join(f"-{line}\n" for line in text.splitlines())
        for name, text in files.items()
        if text
    )
    deletion += "".join(
        f"diff --git a/{n} b/{n}\ndeleted file mode 100644\n" for n, t in files.items() if not t
    )
    before, refs = row_counts(url), agent_refs(service.data_dir)
    with service.worker as worker:
        refused = worker.post(f"/api/worker/steps/{step_id}/child", json={"patch": deletion})
    locs, message = refusal(refused)
    assert locs == [["body", "patch"]] and "deletes every file" in message
    assert row_counts(url) == before and agent_refs(service.data_dir) == refs


def test_odd_agents_already_archived_are_still_served(
    service: AppService, seed_id: str, tmp_path: Path
) -> None:
    """A text file that is not UTF-8 shows in the diff; an empty agent (archived before children
    of nothing were refused) still exports."""
    root = write_agent(tmp_path / "latin")
    (root / "notes.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    with service.admin as admin:
        latin = admin.post("/api/seeds", files={"file": ("a.tgz", tar_of(root))}).json()["id"]
    git_dir = str(service.data_dir / "archive.git")
    identity = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    empty = subprocess.run(
        [
            "git",
            "--git-dir",
            git_dir,
            "commit-tree",
            "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
            "-p",
            seed_id,
            "-m",
            "x",
        ],
        capture_output=True,
        text=True,
        check=True,
        env=identity,
    ).stdout.strip()
    subprocess.run(
        ["git", "--git-dir", git_dir, "update-ref", f"refs/heads/agents/{empty}", empty], check=True
    )
    engine = create_engine(service.env["CLADE_DATABASE_URL"])
    with Session(engine) as session:
        session.add(
            Agent(
                id=empty, parent_id=seed_id, kind="child", tree_id="4b825dc642cb6eb9a060e54bf8d69288fbee4904"
            )
        )
        session.commit()
    engine.dispose()
    with service.anonymous as reader:
        diff = reader.get(f"/api/agents/{latin}/diff")
        assert diff.status_code == 200 and "+caf\ufffd" in diff.text
        exported = reader.get(f"/api/agents/{empty}/export")
        assert exported.status_code == 200
        with tarfile.open(fileobj=io.BytesIO(exported.content)) as tar:
            assert tar.getnames() == [f"agent-{empty[:12]}/metadata.json"]


def test_worker_sends_agent_output_as_storable_text() -> None:
    sent = storable({"result": {"agent_log": "a\x00b", "tests": {"t\ud800": "PASSED"}}, "n": [1.5, None]})
    assert sent == {"result": {"agent_log": "a\ufffdb", "tests": {"t\ufffd": "PASSED"}}, "n": [1.5, None]}
    json.dumps(sent).encode()  # and it goes over the wire


TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")


def times_in(data: Any) -> list[str]:
    if isinstance(data, str):
        return [data] if TIME.match(data) else []
    if isinstance(data, dict):
        return [t for value in data.values() for t in times_in(value)]
    if isinstance(data, list):
        return [t for value in data for t in times_in(value)]
    return []


def test_every_time_carries_its_utc_offset(service: AppService, seed_id: str) -> None:
    url = service.env["CLADE_DATABASE_URL"]
    run_id = start_run(service, seed_id)
    add_evaluation(url, run_id=run_id, agent_id=seed_id, evaluation_id="e1")
    with service.worker as worker:
        body = {"result": {"resolved": True}, "usage": [USAGE]}
        assert worker.post("/api/worker/evaluations/e1/result", json=body).status_code == 200
    paths = [
        "/api/runs",
        f"/api/runs/{run_id}",
        f"/api/runs/{run_id}/agents",
        f"/api/runs/{run_id}/lineage",
        f"/api/runs/{run_id}/usage",
        f"/api/runs/{run_id}/events",
        "/api/agents",
        f"/api/agents/{seed_id}",
        f"/api/agents/{seed_id}/evaluations/e1",
    ]
    seen = []
    with service.anonymous as reader:
        for path in paths:
            seen += [(path, t) for t in times_in(reader.get(path).json())]
    assert {path for path, _ in seen} == set(paths)
    assert [(path, t) for path, t in seen if not t.endswith(("+00:00", "Z"))] == []


def test_seed_id_is_a_function_of_the_code_alone(service: AppService, tmp_path: Path) -> None:
    """The same code, from two checkouts, named or not, is one agent; it keeps its first name."""

    def upload(folder: str, code: str, name: str | None) -> tuple[int, dict[str, Any]]:
        root = write_agent(tmp_path / folder, {"agent.toml": 'solve = "python -m tiny"\n', "code.py": code})
        with service.admin as admin:
            response = admin.post(
                "/api/seeds", files={"file": ("a.tgz", tar_of(root))}, data={"name": name} if name else {}
            )
        return response.status_code, response.json()

    first, again, renamed = upload("a1", "a", None), upload("a2", "a", None), upload("a3", "a", "late")
    assert [first[0], again[0], renamed[0]] == [201, 200, 200]
    assert first[1]["id"] == again[1]["id"] == renamed[1]["id"] and renamed[1]["name"] is None
    named, other = upload("b1", "b", "first"), upload("b2", "b", "second")
    assert (named[0], other[0]) == (201, 200)
    assert named[1]["id"] == other[1]["id"] != first[1]["id"] and other[1]["name"] == "first"
    assert row_counts(service.env["CLADE_DATABASE_URL"])["agents"] == 2
