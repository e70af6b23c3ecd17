"""Edges a hostile-input probe found in the API: each is a clear 4xx at its place, or a plain
answer where there was a 405, and nothing is written by a refused request."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.servers import AppService, ServiceProcess
from tests.service.helpers import add_evaluation, refusal, row_counts, start_run

RESULT: dict[str, Any] = {"resolved": True}


@pytest.mark.parametrize(
    ("durations", "field"),
    [
        ({"total_s": -1e308}, "total_s"),
        ({"setup_s": -0.5}, "setup_s"),
        ({"agent_s": 1e308}, "agent_s"),  # a sum of a few would be infinite, which JSON cannot carry
        ({"grade_s": 31 * 24 * 3600}, "grade_s"),
    ],
)
def test_durations_out_of_any_clock_are_refused_at_their_field(
    service: AppService, seed_id: str, durations: dict[str, float], field: str
) -> None:
    url = service.database_url
    run_id = start_run(service, seed_id)
    add_evaluation(url, run_id=run_id, agent_id=seed_id, evaluation_id="e1")
    before = row_counts(url)
    with service.worker as worker:
        answer = worker.post(
            "/api/worker/evaluations/e1/result", json={"result": RESULT | {"durations": durations}}
        )
        assert refusal(answer)[0] == [["body", "result", "durations", field]]
        assert row_counts(url) == before
        status = worker.get("/api/worker/evaluations/e1/status").json()
        assert status["status"] == "pending" and status["open"]
        # The evaluation is still answered, with durations a clock measures.
        fine = {"setup_s": 0.0, "agent_s": 12.5, "grade_s": 3.0, "total_s": 15.5}
        answer = worker.post(
            "/api/worker/evaluations/e1/result", json={"result": RESULT | {"durations": fine}}
        )
        assert answer.status_code == 200, answer.text
    with service.admin as admin:
        stored = admin.get(f"/api/agents/{seed_id}/evaluations/e1").json()
    assert stored["result"]["durations"] == fine


def test_an_unknown_member_status_is_refused_with_the_ones_there_are(
    service: AppService, seed_id: str
) -> None:
    run_id = start_run(service, seed_id)
    with service.admin as client:
        places, message = refusal(client.get(f"/api/runs/{run_id}/agents", params={"status": "junk"}))
        assert places == [["query", "status"]]
        assert all(value in message for value in ("'evaluating'", "'admitted'", "'rejected'")), message
        seed = client.get(f"/api/runs/{run_id}/agents", params={"status": "evaluating"}).json()
        assert [agent["id"] for agent in seed["items"]] == [seed_id]
        assert client.get(f"/api/runs/{run_id}/agents", params={"status": "admitted"}).json()["total"] == 0


def test_predictions_of_an_agent_not_in_the_run_are_404(service: AppService, seed_id: str) -> None:
    run_id = start_run(service, seed_id)
    stranger = "0" * 40
    with service.admin as client:
        answer = client.get(f"/api/runs/{run_id}/predictions", params={"agent": stranger})
        assert answer.status_code == 404, answer.text
        assert answer.json()["detail"] == f"agent {stranger} is not in run {run_id}"
        pro = client.get(
            f"/api/runs/{run_id}/predictions", params={"agent": stranger, "format": "swebench-pro"}
        )
        assert pro.status_code == 404, pro.text
        # The run's own agents still get their file, empty while nothing is evaluated.
        own = client.get(f"/api/runs/{run_id}/predictions", params={"agent": seed_id})
        assert own.status_code == 200 and own.text == ""


def test_health_answers_a_head_probe(live_service: ServiceProcess) -> None:
    """What a load balancer sends: the same status as GET, and no body (a real server)."""
    with httpx.Client(base_url=live_service.url, timeout=30) as client:
        head = client.head("/api/health")
        get = client.get("/api/health")
    assert head.status_code == get.status_code == 200
    assert head.content == b""
    assert head.headers["content-type"] == get.headers["content-type"] == "application/json"
    assert head.headers["content-length"] == get.headers["content-length"]
    # Not a general HEAD: a POST-only path still says which methods it takes.
    with httpx.Client(base_url=live_service.url, timeout=30) as client:
        assert client.head("/api/runs/x/cancel").status_code == 405


@pytest.mark.parametrize("name", ["box\n2026-01-01 forged log line", "box\r1", "tab\there", "bidi\u202eevil"])
def test_worker_token_names_hold_no_control_character(service: AppService, name: str) -> None:
    with service.admin as admin:
        places, message = refusal(admin.post("/api/admin/worker-tokens", json={"name": name}))
        assert places == [["body", "name"]]
        assert "control or format character" in message
        assert admin.get("/api/admin/worker-tokens").json() == []


def test_worker_token_names_may_repeat(service: AppService) -> None:
    """Names are labels (revoked by id): a machine's new token may take the old one's name."""
    with service.admin as admin:
        first = admin.post("/api/admin/worker-tokens", json={"name": "gpu-box-1"})
        second = admin.post("/api/admin/worker-tokens", json={"name": "gpu-box-1"})
        assert first.status_code == second.status_code == 201
        assert admin.delete(f"/api/admin/worker-tokens/{first.json()['id']}").json()["revoked"]
        listed = {row["id"]: row["revoked"] for row in admin.get("/api/admin/worker-tokens").json()}
        assert listed == {first.json()["id"]: True, second.json()["id"]: False}


def test_a_path_or_query_that_is_not_utf8_is_422_at_its_parameter(service: AppService, seed_id: str) -> None:
    """An encoded surrogate is bytes that are not UTF-8: refused where it stands, never looked up
    under the replacement characters the server decoded it to."""
    run_id = start_run(service, seed_id)
    with service.admin as client:
        places, message = refusal(client.get("/api/runs/%ED%A0%80"))
        assert places == [["path", "run_id"]] and "not UTF-8" in message
        places, _ = refusal(client.post("/api/runs/%ED%A0%80/cancel"))
        assert places == [["path", "run_id"]]
        places, _ = refusal(client.get(f"/api/agents/{seed_id}/evaluations/%C0%AF"))
        assert places == [["path", "evaluation_id"]]
        places, message = refusal(client.get(f"/api/runs/{run_id}/agents?status=%ED%A0%80"))
        assert places == [["query", "status"]] and "not UTF-8" in message
        # U+FFFD sent as itself (valid UTF-8) is an ordinary id that is not there.
        missing = client.get("/api/runs/%EF%BF%BD")
        assert missing.status_code == 404 and missing.json()["detail"] == "run \ufffd not found"
        assert client.get(f"/api/runs/{run_id}").json()["status"] == "running"
