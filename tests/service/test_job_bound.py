"""Answers bound to their jobs, over HTTP: a worker token alone writes nothing (each answer must show
the secret of the job the driver sent), issued worker tokens name what they submit and stop working
the moment they are revoked, and backups keep only their hashes."""

from __future__ import annotations

import gzip
import json
import secrets
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy.orm import sessionmaker

from contracts.errors import ConflictError
from service import job_secrets, worker_tokens
from service.archive.backup import create_backup, restore_backup
from service.db.migrate import alembic_config, upgrade
from service.db.models import Evaluation, Step
from tests.servers import (
    AppService,
    ServiceProcess,
    app_service,
    free_port,
    fresh_postgres_database,
    service_env,
)
from tests.service.helpers import (
    add_evaluation,
    agent_ids,
    core_patch,
    dispatch_in,
    open_step_in,
    row_counts,
    start_run,
)
from tests.service.test_cli import clade
from tests.service.test_migrations import _legacy_rows

A, B, C = "clade-mini__textkit-1", "clade-mini__spanlib-1", "clade-mini__ledger-1"
RESULT = {"result": {"resolved": True, "grade_reason": "resolved"}, "usage": []}


def worker(service: AppService, token: str, secret: str | None) -> httpx.Client:
    """A worker client with a raw bearer `token` and, unless None, a job secret."""
    headers = {"Authorization": f"Bearer {token}"}
    if secret is not None:
        headers["X-Clade-Job-Secret"] = secret
    return httpx.Client(base_url=service.url, headers=headers, timeout=60, transport=service.transport())


def evaluation_answer(service: AppService, agent_id: str, evaluation_id: str) -> dict[str, Any]:
    with service.anonymous as reader:
        agent = reader.get(f"/api/agents/{agent_id}").json()
    return next(e for run in agent["runs"] for e in run["evaluations"] if e["id"] == evaluation_id)


def issue(service: AppService, name: str) -> dict[str, Any]:
    with service.admin as admin:
        issued = admin.post("/api/admin/worker-tokens", json={"name": name})
    assert issued.status_code == 201, issued.text
    body: dict[str, Any] = issued.json()
    return body


def test_a_worker_token_without_the_jobs_secret_writes_nothing(service: AppService, seed_id: str) -> None:
    url = service.database_url
    run_id = start_run(service, seed_id)
    secret = secrets.token_urlsafe(32)
    add_evaluation(url, run_id=run_id, agent_id=seed_id, evaluation_id="e-sent", secret=secret, task_id=A)
    add_evaluation(url, run_id=run_id, agent_id=seed_id, evaluation_id="e-unsent", secret=None, task_id=B)
    step_id = open_step_in(url, run_id=run_id, parent_id=seed_id, secret=secret)
    unsent_step = open_step_in(url, run_id=run_id, parent_id=seed_id, secret=None)
    token = service.secrets["worker_token"]
    before, agents_before = row_counts(url), agent_ids(url)
    child = {"patch": core_patch(4, "forged")}
    for given, code, words in [
        (None, 403, "the job's secret is missing (header X-Clade-Job-Secret)"),
        ("x" * 43, 403, "wrong job secret"),
    ]:
        with worker(service, token, given) as forger:
            answers = [
                forger.post("/api/worker/evaluations/e-sent/result", json=RESULT),
                forger.post(f"/api/worker/steps/{step_id}/child", json=child),
                forger.post(f"/api/worker/steps/{step_id}/reject", json={"reason": "forged"}),
                forger.get("/api/worker/evaluations/e-sent/status"),
                forger.get(f"/api/worker/steps/{step_id}/status"),
            ]
        for answer in answers:
            assert answer.status_code == code, answer.text
            assert words in answer.json()["detail"], answer.text
    # Never dispatched: no job can answer it, whatever it shows.
    with worker(service, token, secret) as forger:
        unsent = [
            forger.post("/api/worker/evaluations/e-unsent/result", json=RESULT),
            forger.post(f"/api/worker/steps/{unsent_step}/child", json=child),
            forger.post(f"/api/worker/steps/{unsent_step}/reject", json={"reason": "forged"}),
        ]
    for answer in unsent:
        assert answer.status_code == 409, answer.text
        assert "was never dispatched to a worker" in answer.json()["detail"]
    assert row_counts(url) == before and agent_ids(url) == agents_before
    for evaluation_id in ("e-sent", "e-unsent"):
        shown = evaluation_answer(service, seed_id, evaluation_id)
        assert (shown["status"], shown["resolved"], shown["worker_name"]) == ("pending", None, None)

    # The job that was sent answers, once; a re-dispatch makes its secret void.
    with worker(service, token, secret) as real:
        assert real.get("/api/worker/evaluations/e-sent/status").json()["open"] is True
        assert real.post("/api/worker/evaluations/e-sent/result", json=RESULT).status_code == 200
        status = real.get("/api/worker/evaluations/e-sent/status").json()
    assert status == {"id": "e-sent", "status": "done", "open": False, "reason": None, "worker_name": "local"}
    dispatch_in(url, Step, step_id, secrets.token_urlsafe(32))
    with worker(service, token, secret) as late:
        refused = late.post(f"/api/worker/steps/{step_id}/child", json=child)
    assert refused.status_code == 403 and "wrong job secret" in refused.json()["detail"]


def test_issued_worker_tokens_sign_their_answers_and_stop_when_revoked(
    service: AppService, seed_id: str
) -> None:
    url = service.database_url
    run_id = start_run(service, seed_id)
    secret = secrets.token_urlsafe(32)
    for evaluation_id, task_id in zip(("e-gpu", "e-late", "e-local"), (A, B, C), strict=True):
        add_evaluation(
            url, run_id=run_id, agent_id=seed_id, evaluation_id=evaluation_id, secret=secret, task_id=task_id
        )
    step_id = open_step_in(url, run_id=run_id, parent_id=seed_id, secret=secret)
    gpu, spare = issue(service, "gpu-box-1"), issue(service, "gpu-box-2")
    assert gpu["name"] == "gpu-box-1" and gpu["revoked"] is False and len(gpu["token"]) >= 32

    with worker(service, gpu["token"], secret) as box:
        assert box.post("/api/worker/evaluations/e-gpu/result", json=RESULT).status_code == 200
        made = box.post(f"/api/worker/steps/{step_id}/child", json={"patch": core_patch(6, "six")})
        assert made.status_code == 200, made.text
    shown = evaluation_answer(service, seed_id, "e-gpu")
    assert (shown["worker_token_id"], shown["worker_name"]) == (gpu["id"], "gpu-box-1")
    with service.anonymous as reader:
        events = reader.get(f"/api/runs/{run_id}/events").json()
    workers = {e["kind"]: e["payload"].get("worker") for e in events}
    assert workers["evaluation_done"] == workers["child_created"] == "gpu-box-1"

    with service.admin as admin:
        listed = admin.get("/api/admin/worker-tokens").json()
        expected = [(gpu["id"], "gpu-box-1"), (spare["id"], "gpu-box-2")]
        assert [(t["id"], t["name"]) for t in listed] == expected
        assert all("token" not in t for t in listed)
        revoked = admin.delete(f"/api/admin/worker-tokens/{gpu['id']}")
        assert revoked.status_code == 200 and revoked.json()["revoked"] is True
        assert admin.delete("/api/admin/worker-tokens/nope").status_code == 404
    with worker(service, gpu["token"], secret) as box:
        late = box.post("/api/worker/evaluations/e-late/result", json=RESULT)
        code = box.get(f"/api/worker/agents/{seed_id}/code")
    for answer in (late, code):
        assert answer.status_code == 401, answer.text
        assert answer.json()["detail"] == f"worker token {gpu['id']} (gpu-box-1) was revoked"
    assert evaluation_answer(service, seed_id, "e-late")["status"] == "pending"
    # The other token, and the settings' own (the `local` worker of one-machine setups), still work.
    with worker(service, spare["token"], secret) as other:
        assert other.get(f"/api/worker/agents/{seed_id}/code").status_code == 200
    with worker(service, service.secrets["worker_token"], secret) as local:
        assert local.post("/api/worker/evaluations/e-local/result", json=RESULT).status_code == 200
    assert evaluation_answer(service, seed_id, "e-local")["worker_name"] == "local"
    # Only the admin manages tokens.
    with worker(service, spare["token"], None) as other:
        assert other.get("/api/admin/worker-tokens").status_code == 401
        assert other.post("/api/admin/worker-tokens", json={"name": "mine"}).status_code == 401
    with service.admin as admin:
        blank = admin.post("/api/admin/worker-tokens", json={"name": "  "})
    assert blank.status_code == 422 and blank.json()["detail"][0]["loc"] == ["body", "name"]


def test_a_backup_keeps_worker_tokens_hashed_and_restores_them(
    service: AppService, seed_id: str, tmp_path: Path
) -> None:
    issued = issue(service, "restored-box")
    out = tmp_path / "archive.clade-backup"
    manifest = create_backup(data_dir=service.data_dir, database_url=service.database_url, out=out)
    assert manifest.counts["worker_tokens"] == 1
    with tarfile.open(out) as tar:
        contents = b"".join(
            gzip.decompress(data) if member.name.endswith(".gz") else data
            for member in tar.getmembers()
            if member.isfile() and (data := tar.extractfile(member).read())  # type: ignore[union-attr]
        )
    assert issued["token"].encode() not in contents and b"restored-box" in contents
    data_dir = tmp_path / "restored"
    restore_backup(backup=out, data_dir=data_dir, database_url=f"sqlite:///{data_dir / 'clade.db'}")
    env = service_env(data_dir, f"sqlite:///{data_dir / 'clade.db'}", free_port())
    with app_service(env) as restored, worker(restored, issued["token"], None) as box:
        assert box.get(f"/api/worker/agents/{seed_id}/code").status_code == 200


def test_a_step_rejection_and_an_evaluation_need_the_dispatch_they_answer(
    service: AppService, seed_id: str
) -> None:
    """The secret is checked against the row it names, not any dispatched row."""
    url = service.database_url
    run_id = start_run(service, seed_id)
    mine, theirs = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    add_evaluation(url, run_id=run_id, agent_id=seed_id, evaluation_id="e-mine", secret=mine, task_id=A)
    add_evaluation(url, run_id=run_id, agent_id=seed_id, evaluation_id="e-theirs", secret=theirs, task_id=B)
    with worker(service, service.secrets["worker_token"], mine) as client:
        crossed = client.post("/api/worker/evaluations/e-theirs/result", json=RESULT)
    assert crossed.status_code == 403
    assert evaluation_answer(service, seed_id, "e-theirs")["status"] == "pending"
    dispatch_in(url, Evaluation, "e-theirs", mine)  # sent again, now with the same secret as e-mine
    with worker(service, service.secrets["worker_token"], mine) as client:
        assert client.post("/api/worker/evaluations/e-theirs/result", json=RESULT).status_code == 200


def test_the_worker_token_commands(live_service: ServiceProcess, tmp_path: Path) -> None:
    url, data = live_service.url, live_service.data_dir
    created = clade(url, data, "worker-token", "create", "gpu-box-1")
    assert created.returncode == 0, created.stderr
    assert "gpu-box-1" in created.stdout and "it is not shown again" in created.stdout
    issued = json.loads(clade(url, data, "--json", "worker-token", "create", "gpu-box-2").stdout)
    token = created.stdout.splitlines()[1].strip()  # under the line naming it, alone
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as box:
        assert box.get("/api/worker/steps/none/status").status_code == 404  # a worker's token

    table = clade(url, data, "worker-token", "list")
    assert table.returncode == 0 and "gpu-box-1" in table.stdout and issued["id"] in table.stdout
    assert token not in table.stdout and issued["token"] not in table.stdout
    listed = json.loads(clade(url, data, "--json", "worker-token", "list").stdout)
    first = next(t for t in listed if t["name"] == "gpu-box-1")

    revoked = clade(url, data, "worker-token", "revoke", first["id"])
    assert revoked.returncode == 0 and "revoked" in revoked.stdout, revoked.stderr
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as box:
        assert box.get("/api/worker/steps/none/status").status_code == 401
    unknown = clade(url, data, "worker-token", "revoke", "nope")
    assert unknown.returncode == 1 and "404" in unknown.stderr and "nope" in unknown.stderr


@pytest.fixture(params=["sqlite", "postgres"])
def blank_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database with no schema yet, so the test stops its migrations where it wants."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'clade.db'}"
    else:
        with fresh_postgres_database() as url:
            yield url


def test_a_database_from_before_0005_takes_tokens_and_its_old_jobs_take_no_answer(
    blank_database: str,
) -> None:
    upgrade(blank_database, "0004")
    engine = sa.create_engine(blank_database)
    try:
        with engine.begin() as connection:
            _legacy_rows(connection)  # evaluations dispatched by a Clade without job secrets
        upgrade(blank_database)
        with engine.connect() as connection:
            rows = connection.execute(sa.text("select id, job_secret_hash, worker_name from evaluations"))
            assert sorted(tuple(row) for row in rows) == [("graded", None, None), ("lost", None, None)]
        sessions = sessionmaker(engine)
        with sessions.begin() as session:
            _row, token = worker_tokens.issue(session, name="after-upgrade")
        with sessions() as session:
            found = worker_tokens.find(session, token)
            assert found is not None and found.name == "after-upgrade" and found.token_hash != token
            evaluation = session.get(Evaluation, "graded")
            assert evaluation is not None
            with pytest.raises(ConflictError, match="never dispatched"):
                job_secrets.verify(evaluation, "any")
        command.downgrade(alembic_config(blank_database), "0004")  # and back, losing only the new parts
        with engine.connect() as connection:
            assert "worker_tokens" not in sa.inspect(connection).get_table_names()
            assert connection.execute(sa.text("select count(*) from evaluations")).scalar_one() == 2
    finally:
        engine.dispose()
