"""The reads only the dashboard needs, against the live service holding the recorded archive."""

from __future__ import annotations

from datetime import datetime
from itertools import pairwise

from tests.web.recorded import Recorded


def test_usage_over_time_is_cumulative_and_matches_the_run(archive: Recorded) -> None:
    with archive.service.anonymous as reader:
        usage = reader.get(f"/api/runs/{archive.run_id}/usage", params={"points": 5}).json()
        run = reader.get(f"/api/runs/{archive.run_id}").json()
        assert reader.get("/api/runs/nope/usage").status_code == 404
    points = usage["points"]
    assert 2 <= len(points) <= 5
    assert all(a["usd"] <= b["usd"] and a["tokens"] <= b["tokens"] for a, b in pairwise(points))
    assert abs(points[-1]["usd"] - run["progress"]["usd"]) < 1e-9
    assert points[-1]["tokens"] == run["progress"]["tokens"]
    assert all(datetime.fromisoformat(p["at"]).tzinfo is not None for p in points)
    purposes = {p["purpose"]: p for p in usage["by_purpose"]}
    assert set(purposes) == {"solve", "improve", "diagnose"}
    assert purposes["improve"]["calls"] == purposes["diagnose"]["calls"]  # one of each per child
    assert points[-1]["calls"] == sum(p["calls"] for p in purposes.values())


def test_live_lineage_carries_the_newest_event_id(archive: Recorded) -> None:
    with archive.service.anonymous as reader:
        live = reader.get(f"/api/runs/{archive.run_id}/lineage/live").json()
        plain = reader.get(f"/api/runs/{archive.run_id}/lineage").json()
        events = reader.get(f"/api/runs/{archive.run_id}/events", params={"after": 0, "limit": 1000}).json()
    assert live["nodes"] == plain["nodes"] and live["run_id"] == archive.run_id
    assert live["cursor"] == max(e["id"] for e in events)


def test_config_text_becomes_json_or_a_422_at_the_text(archive: Recorded) -> None:
    parse = "/api/dashboard/parse-config"
    with archive.service.anonymous as anonymous:
        assert anonymous.post(parse, json={"text": "name: x\n"}).status_code == 401
    with archive.service.admin as reader:
        yaml_text = "name: x\nbudget: {max_usd: 1.5}\nstages:\n  - {subset: mini-5, threshold: 0.4}\n"
        assert reader.post(parse, json={"text": yaml_text}).json()["config"] == {
            "name": "x",
            "budget": {"max_usd": 1.5},
            "stages": [{"subset": "mini-5", "threshold": 0.4}],
        }
        assert reader.post(parse, json={"text": '{"name": "y"}'}).json()["config"] == {"name": "y"}
        for bad, message in [
            ("name: [unclosed", "line 1"),
            ("- just\n- a list\n", "mapping"),
            ("when: 2024-01-01\n", "JSON cannot carry"),
        ]:
            response = reader.post(parse, json={"text": bad})
            assert response.status_code == 422, bad
            (issue,) = response.json()["detail"]
            assert issue["loc"] == ["body", "text"] and message in issue["msg"], issue
