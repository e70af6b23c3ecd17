"""Edges a hostile-input probe found in the API: each is a clear 4xx at its place, or a plain
answer where there was a 405, and nothing is written by a refused request."""

from __future__ import annotations

from typing import Any

import pytest

from tests.servers import AppService
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
