"""Run configurations a hostile or careless client sends: numbers the database cannot sum, priors
that hang a draw, integers too long to read, budgets that leave no room for a child. Each is
refused at plan time with a 422 naming its field once, and nothing is stored."""

from __future__ import annotations

from typing import Any

from cli.client import describe
from contracts.config import MAX_RUN_COUNT
from contracts.records import MAX_TOTAL_TOKENS
from tests.servers import AppService
from tests.service.helpers import config, refusal, row_counts


def _refused_everywhere(service: AppService, body: dict[str, Any]) -> tuple[list[list[str | int]], str]:
    """The 422 of `POST /api/runs/plan`, checked to be that of `POST /api/runs`, which stores nothing."""
    before = row_counts(service.database_url)
    with service.admin as client:
        planned = refusal(client.post("/api/runs/plan", json=body))
        created = refusal(client.post("/api/runs", json=body))
    assert planned == created
    assert row_counts(service.database_url) == before
    return planned


def test_budget_counts_are_bounded_so_their_sums_fit_the_database(service: AppService, seed_id: str) -> None:
    for field, value in [
        ("max_tokens", 10**30),
        ("max_tokens", 2**63),
        ("max_tokens", MAX_RUN_COUNT + 1),
        ("max_evaluations", MAX_RUN_COUNT + 1),
        ("per_evaluation_tokens", MAX_TOTAL_TOKENS + 1),
    ]:
        body = config(seed_id, budget={"max_children": 1, field: value})
        locs, message = _refused_everywhere(service, body)
        assert locs == [["body", "budget", field]], (field, value)
        assert "less than or equal to" in message
    with service.admin as client:
        at_bound = config(seed_id, budget={"max_children": 1, "max_tokens": MAX_RUN_COUNT})
        assert client.post("/api/runs", json=at_bound).status_code == 201
        assert client.get("/api/runs").status_code == 200


def test_an_hgm_prior_that_would_hang_the_draw_is_refused(service: AppService, seed_id: str) -> None:
    for name, value in [("alpha", 1e308), ("beta", 1e308), ("alpha", 1e7), ("beta", 1e-300)]:
        body = config(seed_id, selection={"strategy": "hgm", "params": {name: value}})
        locs, message = _refused_everywhere(service, body)
        assert locs == [["body", "selection", "params", name]], (name, value)
        assert "than or equal to" in message and "selection.params" not in message
    with service.admin as client:
        fine = config(seed_id, selection={"strategy": "hgm", "params": {"alpha": 1e6, "beta": 1e-6}})
        assert client.post("/api/runs/plan", json=fine).status_code == 200


def test_a_refusal_names_its_field_once(service: AppService, seed_id: str) -> None:
    with service.admin as client:
        for body, field in [
            (
                config(seed_id, selection={"strategy": "hgm", "params": {"alpha": -1}}),
                "selection.params.alpha",
            ),
            (config(seed_id, stages=[{"subset": "nope"}]), "stages.0.subset"),
            (config("0" * 40), "seed_agent"),
        ]:
            response = client.post("/api/runs/plan", json=body)
            (issue,) = response.json()["detail"]
            assert field not in issue["msg"], issue
            shown = describe(response)  # as `clade run start` prints it
            assert shown.startswith(f"{field}: ") and shown.count(field) == 1, shown
