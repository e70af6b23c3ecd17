"""`CLADE_LOG_FORMAT=json`: one JSON object a line, carrying the run, step or evaluation id."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

from sqlalchemy import select

from contracts.celery_app import make_celery
from contracts.logs import current_ids, log_ids
from service.db.engine import make_engine, make_session_factory
from service.db.models import Run
from service.driver.dispatch import CeleryDispatcher
from service.driver.jobs import Outbox
from service.driver.tick import drive
from tests.logs_capture import json_log_lines
from tests.servers import AppService, free_port, service_env, settings_from_env, start_service
from tests.service.helpers import config

log = logging.getLogger("clade.test")


def test_lines_carry_the_ids_in_effect_even_in_another_thread() -> None:
    with json_log_lines() as lines:
        log.info("before")
        with log_ids(run_id="r1"):
            with log_ids(step_id="s1"):
                ids = current_ids()
                log.info("inside")
            log.warning("outer again")

        def elsewhere() -> None:  # a thread starts with no ids: it is handed them
            with log_ids(**ids):
                try:
                    raise ValueError("boom")
                except ValueError:
                    log.exception("failed")

        thread = threading.Thread(target=elsewhere)
        thread.start()
        thread.join(timeout=10)
    by_message = {line["message"]: line for line in lines}
    assert "run_id" not in by_message["before"]
    assert (by_message["inside"]["run_id"], by_message["inside"]["step_id"]) == ("r1", "s1")
    assert "step_id" not in by_message["outer again"] and by_message["outer again"]["level"] == "WARNING"
    failed = by_message["failed"]
    assert (failed["run_id"], failed["step_id"]) == ("r1", "s1")
    assert "ValueError: boom" in failed["exception"] and failed["logger"] == "clade.test"


def test_the_service_logs_a_job_sent_and_its_result_with_their_ids(service: AppService, seed_id: str) -> None:
    with service.admin as client:
        run_id = client.post(
            "/api/runs", json=config(seed_id, stages=[{"tasks": ["clade-mini__textkit-1"]}])
        ).json()["id"]
    engine = make_engine(service.env["CLADE_DATABASE_URL"])
    sessions = make_session_factory(engine)
    outbox = Outbox()
    with sessions.begin() as session:
        run = session.scalars(select(Run).where(Run.id == run_id)).one()
        drive(session, run, outbox)
    engine.dispose()
    [job] = outbox.evaluate
    dispatcher = CeleryDispatcher(make_celery(settings_from_env(service.env)))  # the file broker
    with json_log_lines() as lines:
        with log_ids(run_id=run_id):  # as the driver's tick does for each run
            dispatcher.evaluate(job)
        with service.client("worker_token", job_secret=job.secret) as worker:
            response = worker.post(
                f"/api/worker/evaluations/{job.evaluation_id}/result",
                json={"result": {"resolved": True}, "usage": []},
            )
        assert response.status_code == 200, response.text
    sent = next(line for line in lines if line["message"] == f"sent evaluate-{job.evaluation_id}")
    assert (sent["run_id"], sent["evaluation_id"]) == (run_id, job.evaluation_id)
    recorded = next(line for line in lines if line["message"].startswith(f"evaluation {job.evaluation_id}"))
    assert recorded["evaluation_id"] == job.evaluation_id and recorded["logger"] == "clade.service"


def test_clade_serve_writes_only_json_lines(tmp_path: Path) -> None:
    env = service_env(tmp_path / "data", None, free_port(), CLADE_LOG_FORMAT="json")
    process = start_service(env)
    try:
        with process.anonymous as client:
            assert client.get("/metrics").status_code == 200
    finally:
        process.stop()
    lines = [json.loads(line) for line in process.log().splitlines() if line.strip()]
    assert lines and all({"time", "level", "logger", "message"} <= line.keys() for line in lines)
    assert any(line["logger"] == "uvicorn.access" and "/metrics" in line["message"] for line in lines)
    assert {line["process"] for line in lines} == {"service"}
