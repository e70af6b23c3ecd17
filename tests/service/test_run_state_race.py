"""Run state changes that arrive at once: each is decided on the status the other left, never on
the same one read by both (SQLite ignores FOR UPDATE; a cancel was overwritten by a pause)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

import httpx
from sqlalchemy.orm import Session, sessionmaker

from service.db.locks import locked
from service.db.models import Run
from service.runs import complete
from tests.servers import AppService
from tests.service.helpers import start_run

ROUNDS = 8
STATE_EVENTS = {"run_paused", "run_running", "run_cancelled", "run_completed"}


def _at_once(service: AppService, run_id: str, actions: list[str]) -> list[httpx.Response]:
    """The actions sent together, each from its own thread and connection, in the order given."""
    barrier = threading.Barrier(len(actions), timeout=30)

    def send(action: str) -> httpx.Response:
        with service.admin as client:
            barrier.wait()
            return client.post(f"/api/runs/{run_id}/{action}")

    with ThreadPoolExecutor(len(actions)) as pool:
        return list(pool.map(send, actions, timeout=120))


def _state_events(client: httpx.Client, run_id: str) -> list[str]:
    answer = client.get(f"/api/runs/{run_id}/events")
    assert answer.status_code == 200, answer.text
    return [event["kind"] for event in answer.json() if event["kind"] in STATE_EVENTS]


def test_a_cancel_and_a_pause_at_once_leave_the_run_cancelled(service: AppService, seed_id: str) -> None:
    for _ in range(ROUNDS):
        run_id = start_run(service, seed_id)
        cancel, pause = _at_once(service, run_id, ["cancel", "pause"])
        # Either order is a legal pair of changes: pause then cancel (both 200), or cancel then
        # a refused pause. Never a cancel answered 200 and then undone.
        assert cancel.status_code == 200, cancel.text
        assert pause.status_code in (200, 409), pause.text
        with service.admin as client:
            run = client.get(f"/api/runs/{run_id}").json()
            assert run["status"] == "cancelled"
            assert run["stop_reason"] == "cancel requested" and run["finished_at"] is not None
            paused_first = pause.status_code == 200
            assert _state_events(client, run_id) == (
                ["run_paused", "run_cancelled"] if paused_first else ["run_cancelled"]
            )
            if not paused_first:
                assert "it is cancelled" in pause.json()["detail"]
            for action in ("pause", "resume"):
                refused = client.post(f"/api/runs/{run_id}/{action}")
                assert refused.status_code == 409, refused.text
                assert "it is cancelled" in refused.json()["detail"]
            assert client.get(f"/api/runs/{run_id}").json()["status"] == "cancelled"


def test_two_cancels_at_once_cancel_once(service: AppService, seed_id: str) -> None:
    for _ in range(ROUNDS):
        run_id = start_run(service, seed_id)
        answers = _at_once(service, run_id, ["cancel", "cancel"])
        assert sorted(answer.status_code for answer in answers) == [200, 409], [a.text for a in answers]
        with service.admin as client:
            assert _state_events(client, run_id) == ["run_cancelled"]
            assert client.get(f"/api/runs/{run_id}").json()["status"] == "cancelled"


def test_a_pause_and_a_resume_at_once_leave_one_story(service: AppService, seed_id: str) -> None:
    """From paused, a resume and a second pause: the pause counts only after the resume."""
    for _ in range(ROUNDS):
        run_id = start_run(service, seed_id)
        with service.admin as client:
            assert client.post(f"/api/runs/{run_id}/pause").status_code == 200
        resume, pause = _at_once(service, run_id, ["resume", "pause"])
        assert resume.status_code == 200, resume.text
        with service.admin as client:
            status = client.get(f"/api/runs/{run_id}").json()["status"]
            if pause.status_code == 200:
                assert status == "paused"
                assert _state_events(client, run_id) == ["run_paused", "run_running", "run_paused"]
            else:
                assert pause.status_code == 409, pause.text
                assert status == "running"
                assert _state_events(client, run_id) == ["run_paused", "run_running"]


def test_a_cancel_sent_while_the_driver_completes_the_run_waits_and_is_refused(
    service: AppService, seed_id: str
) -> None:
    """The driver's tick holds the run as `service.driver.loop` does; a cancel arriving meanwhile
    waits for the tick to commit, then finds the run completed (it never overwrites the end)."""
    run_id = start_run(service, seed_id)
    app: Any = service.app_transport.asgi.app  # type: ignore[attr-defined]
    sessions: sessionmaker[Session] = app.state.services.sessions
    with sessions() as tick, ThreadPoolExecutor(1) as pool:
        run = locked(tick, Run, run_id)
        assert run is not None and run.status == "running"
        complete(tick, run=run, reason="budget: spent")
        tick.flush()
        cancel = pool.submit(lambda: _at_once(service, run_id, ["cancel"])[0])
        done, _ = wait([cancel], timeout=1.0)
        assert not done, "the cancel did not wait for the tick holding the run"
        tick.commit()
        refused = cancel.result(timeout=60)
    assert refused.status_code == 409, refused.text
    assert "it is completed" in refused.json()["detail"]
    with service.admin as client:
        run_now = client.get(f"/api/runs/{run_id}").json()
        assert run_now["status"] == "completed" and run_now["stop_reason"] == "budget: spent"
        assert _state_events(client, run_id) == ["run_completed"]
