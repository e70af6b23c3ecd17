"""A child whose job is re-dispatched while its patch is being committed is refused: the secret is
checked again on the locked step before the child is recorded, not only when the request arrives."""

from __future__ import annotations

import secrets
from typing import Any

import httpx
import pytest

from service.archive.store import Archive
from service.db.models import Step
from tests.servers import AppService
from tests.service.helpers import agent_ids, core_patch, dispatch_in, open_step_in, start_run


def _archive(service: AppService) -> Archive:
    app: Any = service.app_transport.asgi.app  # type: ignore[attr-defined]
    archive: Archive = app.state.services.archive
    return archive


def test_a_child_of_a_job_re_dispatched_meanwhile_is_refused(
    service: AppService, seed_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = service.database_url
    run_id = start_run(service, seed_id)
    first, second = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    step_id = open_step_in(url, run_id=run_id, parent_id=seed_id, secret=first)
    git = _archive(service).git
    commit_patch = git.commit_patch

    def re_dispatched_meanwhile(*args: Any, **kwargs: Any) -> Any:
        made = commit_patch(*args, **kwargs)
        dispatch_in(url, Step, step_id, second)  # the driver gave up on the first message
        return made

    monkeypatch.setattr(git, "commit_patch", re_dispatched_meanwhile)
    before = agent_ids(url)
    headers = {"Authorization": f"Bearer {service.secrets['worker_token']}", "X-Clade-Job-Secret": first}
    with httpx.Client(
        base_url=service.url, headers=headers, timeout=60, transport=service.transport()
    ) as late:
        answer = late.post(f"/api/worker/steps/{step_id}/child", json={"patch": core_patch(4, "late")})
    assert answer.status_code == 403, answer.text
    assert "wrong job secret" in answer.json()["detail"]
    assert agent_ids(url) == before
    monkeypatch.setattr(git, "commit_patch", commit_patch)
    # The job sent last still answers.
    with service.worker as worker:
        headers = {"X-Clade-Job-Secret": second}
        child = worker.post(
            f"/api/worker/steps/{step_id}/child", json={"patch": core_patch(4, "new")}, headers=headers
        )
    assert child.status_code == 200, child.text
    assert agent_ids(url) == before | {child.json()["id"]}
