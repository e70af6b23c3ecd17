"""The run event feed is the typed union of contracts/events.py, on the wire and in the CLI.

Every kind, stored as the service stores it, comes back from `/api/runs/{id}/events` as its own
model; a stored row that no longer fits its model is answered as an `unreadable` event, with
internal error texts still hidden from non-admins; the OpenAPI document shows the union with
its discriminator, so the dashboard's generated types carry it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from cli.events import describe_event
from contracts import events as ev
from contracts.config import JudgeConfig
from service import events
from service.api.redact import HIDDEN_ERROR
from service.db.models import Event
from tests.servers import AppService
from tests.service.helpers import start_run

SHA = "a" * 40
OTHER = "b" * 40
SINCE = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
JUDGE: dict[str, Any] = {"model": "scripted", "rubric": "small diffs", "threshold": 0.5, "mode": "judge_only"}

# One payload of each kind that is emitted, as its emission site builds it.
SAMPLES: list[ev.Payload] = [
    ev.SeedImported(agent_id=SHA, name="seed"),
    ev.RunCreated(name="r"),
    ev.RunPaused(action="pause"),
    ev.RunRunning(action="resume"),
    ev.RunCancelled(reason="cancel requested"),
    ev.RunCompleted(reason="budget spent: max_children"),
    ev.StepOpened(step=1, parent_id=SHA),
    ev.CrossoverOpened(step=2, parent_id=SHA, second_parent_id=OTHER),
    ev.ChildCreated(agent_id=OTHER, parent_id=SHA, step=1, rejection=None, files=["a.py"]),
    ev.StepRejected(step=3, reason="empty patch", worker="w1"),
    ev.EvaluationDone(evaluation_id="e1", agent_id=SHA, task_id="t1", resolved=True, worker="w1"),
    ev.AgentAdmitted(agent_id=OTHER, score=0.5, reason=None, step=1),
    ev.AgentRejected(agent_id=OTHER, score=0.0, reason="stage 1: 0.00 < 0.20", step=1),
    ev.AgentRescored(agent_id=SHA, epoch=1, score=0.25, resolved=1, attempted=4),
    ev.StageStopped(
        agent_id=SHA,
        step=3,
        epoch=0,
        stage=0,
        reason="cannot_reach_threshold",
        passed=False,
        tasks=5,
        stage_tasks=10,
        resolved=0,
        evaluations=5,
        low=0.0,
        high=0.351,
        detail="upper bound 0.351 < threshold 0.4",
    ),
    ev.EpochStarted(
        epoch=1,
        after_steps=2,
        steps_opened=2,
        utility=ev.Utility(
            version=1, stages=[ev.StageUtility(tasks=2, threshold=0.5)], judge=JudgeConfig(**JUDGE)
        ),
        rescore=[SHA],
    ),
    ev.IslandMigration(agent_id=SHA, from_=0, to=1, step=4),
    ev.ExperienceUpdated(run_id="r", version=1, finished_steps=0, entries=[], left_out=0, text=""),
    ev.HeldoutStarted(agents=[SHA], tasks=["t9"]),
    ev.HeldoutFinished(agents={SHA: ev.HeldoutScore(resolved=1, total=2, low=0.0945)}, best_agent_id=SHA),
    ev.CheckpointReached(fraction=0.5, spent=0.52, agent_id=SHA, selection_low=0.3, final=False),
    ev.CheckpointScored(
        fraction=0.5, agent_id=SHA, resolved=2, total=3, low=0.2077, high=0.9385, pick_agent_id=SHA
    ),
    ev.PolicyRecord(name="ledger_admitted", data={"agent_id": SHA, "step": 1}),
    ev.DriverError(scope="run", error="OperationalError: /var/lib/secret", since=SINCE, failed_ticks=2),
]
FEED: TypeAdapter[list[ev.RunEvent]] = TypeAdapter(list[ev.RunEvent])


def _store(service: AppService, rows: list[Event]) -> None:
    engine = create_engine(service.database_url)
    with Session(engine) as session:
        session.add_all(rows)
        session.commit()
    engine.dispose()


def _feed(client: Any, run_id: str) -> list[dict[str, Any]]:
    response = client.get(f"/api/runs/{run_id}/events", params={"limit": 1000})
    assert response.status_code == 200, response.text
    answer: list[dict[str, Any]] = response.json()
    return answer


def test_the_samples_cover_every_emitted_kind() -> None:
    assert {ev.kind_of(sample) for sample in SAMPLES} == set(ev.event_kinds()) - {ev.UNREADABLE}


@pytest.mark.parametrize("database_url", ["sqlite", "postgres"], indirect=True)
def test_every_kind_comes_back_from_the_feed_as_its_model(service: AppService, seed_id: str) -> None:
    run_id = start_run(service, seed_id)
    _store(service, [events.event_row(sample, run_id=run_id) for sample in SAMPLES])
    with service.admin as admin:
        answered = _feed(admin, run_id)
    typed = FEED.validate_python(answered)
    mine = {e.kind: (raw, e) for raw, e in zip(answered, typed, strict=True)}  # the later run_created
    for sample in SAMPLES:
        raw, event = mine[ev.kind_of(sample)]
        assert type(event.payload) is type(sample) and event.payload == sample
        assert raw["payload"] == sample.model_dump(mode="json")
        assert list(raw) == ["id", "kind", "payload", "created_at"]
        assert datetime.fromisoformat(raw["created_at"]).tzinfo is not None
        assert describe_event(raw).startswith(raw["created_at"][11:19] + " ")
    # A field that does not apply is left out, not answered as null; the alias is the wire name.
    assert "worker" not in mine["child_created"][0]["payload"]
    assert "reused_from" not in mine["evaluation_done"][0]["payload"]
    assert mine["island_migration"][0]["payload"]["from"] == 0
    assert mine["driver_error"][0]["payload"]["since"] == "2026-12-01T10:00:00+00:00"


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_stored_payload_that_no_longer_fits_is_answered_as_unreadable(
    service: AppService, seed_id: str
) -> None:
    run_id = start_run(service, seed_id)
    secret = "psycopg.OperationalError: connection to /var/lib/secret-host-path failed"
    odd = [
        Event(run_id=run_id, kind="agent_admitted", payload={"agent_id": 5, "step": "one"}),
        Event(run_id=run_id, kind="gone_kind", payload={"x": 1}),
        Event(run_id=run_id, kind="heldout_finished", payload={"agents": {str(i): {} for i in range(500)}}),
        Event(run_id=run_id, kind="driver_error", payload={"scope": "run", "error": secret}),
        # SQLite's JSON keeps a NaN no JSON answer can carry.
        Event(run_id=run_id, kind="agent_rejected", payload={"agent_id": SHA, "score": float("nan")}),
        events.event_row(ev.StepOpened(step=1, parent_id=SHA), run_id=run_id),
    ]
    _store(service, odd)
    with service.anonymous as anonymous:
        answered = _feed(anonymous, run_id)
    with service.admin as admin:
        as_admin = _feed(admin, run_id)
    kinds = [e["kind"] for e in answered]
    assert kinds == ["run_created", *["unreadable"] * 5, "step_opened"]
    admitted, gone, many, failure, nan = (e["payload"] for e in answered[1:6])
    assert admitted["stored_kind"] == "agent_admitted"
    assert admitted["stored_payload"] == {"agent_id": 5, "step": "one"}
    for field in ("agent_id", "step", "score", "reason"):
        assert f"{field}: " in admitted["problem"], admitted["problem"]
    assert gone == {
        "stored_kind": "gone_kind",
        "stored_payload": {"x": 1},
        "problem": "no event kind 'gone_kind' is known",
    }
    assert failure["stored_payload"] == {"scope": "run", "error": HIDDEN_ERROR}
    assert secret not in str(answered)
    assert as_admin[4]["payload"]["stored_payload"]["error"] == secret
    assert nan["stored_payload"] == {"agent_id": SHA, "score": None}
    # A row with a page of faults names the first few and counts the rest.
    assert many["problem"].count(": Field required") == 5 and many["problem"].endswith("; and 1496 more")
    # The next poll goes on from the last id, past the odd rows.
    assert [e["id"] for e in answered] == sorted(e["id"] for e in answered)
    for typed in FEED.validate_python(answered):
        assert isinstance(typed, ev.Envelope)
    # `clade run watch` shows an unreadable event as it was stored, as it showed any kind it had no line for.
    assert describe_event(answered[2]) == f'{answered[2]["created_at"][11:19]} gone_kind {{"x": 1}}'


def test_the_cli_shows_an_event_it_cannot_parse_as_kind_and_json() -> None:
    newer = {
        "id": 9,
        "kind": "from_a_newer_service",
        "payload": {"n": 1},
        "created_at": "2026-12-01T10:11:12+00:00",
    }
    assert describe_event(newer) == '10:11:12 from_a_newer_service {"n": 1}'


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_openapi_document_shows_the_feed_as_a_discriminated_union(service: AppService) -> None:
    with service.anonymous as anonymous:
        document = anonymous.get("/openapi.json").json()
    answer = document["paths"]["/api/runs/{run_id}/events"]["get"]["responses"]["200"]
    items = answer["content"]["application/json"]["schema"]["items"]
    assert items["discriminator"]["propertyName"] == "kind"
    mapping = items["discriminator"]["mapping"]
    assert set(mapping) == set(ev.event_kinds())
    assert sorted(ref["$ref"] for ref in items["oneOf"]) == sorted(mapping.values())
    child = document["components"]["schemas"]["ChildCreatedEvent"]
    assert child["properties"]["kind"]["const"] == "child_created"
    assert child["properties"]["payload"] == {"$ref": "#/components/schemas/ChildCreated"}


def test_a_policy_records_a_known_kind_as_its_model_and_its_own_kind_by_name() -> None:
    migration = {"agent_id": SHA, "from": 0, "to": 1, "step": 4}
    assert events.policy_payload("island_migration", migration) == ev.IslandMigration(**migration)
    own = events.policy_payload("ledger_admitted", {"agent_id": SHA})
    assert own == ev.PolicyRecord(name="ledger_admitted", data={"agent_id": SHA})
    with pytest.raises(ValidationError, match="to"):
        events.policy_payload("island_migration", {"agent_id": SHA, "from": 0, "step": 4})
    with pytest.raises(ValueError, match="not a kind to record"):
        events.policy_payload("unreadable", {})


def test_first_names_the_oldest_event_of_a_kind_and_none_before_one(
    service: AppService, seed_id: str
) -> None:
    run_id = start_run(service, seed_id)
    engine = create_engine(service.database_url)
    with Session(engine) as session:
        assert events.first(session, run_id=run_id, kind="heldout_started") is None
        for agents in (["a"], ["b"]):
            started = ev.HeldoutStarted(agents=agents, tasks=["t1"], measured=0)
            events.emit(session, started, run_id=run_id)
        session.commit()
        found = events.first(session, run_id=run_id, kind="heldout_started")
        assert found is not None and found.payload["agents"] == ["a"]
        assert events.first(session, run_id="no-such-run", kind="heldout_started") is None
    engine.dispose()
