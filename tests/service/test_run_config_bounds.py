"""Run configurations a hostile or careless client sends: numbers the database cannot sum, priors
that hang a draw, integers too long to read, budgets that leave no room for a child. Each is
refused at plan time with a 422 naming its field once, and nothing is stored."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from fastapi.routing import APIRoute
from starlette.routing import BaseRoute

from cli.client import describe
from contracts.config import MAX_RUN_COUNT
from contracts.records import MAX_TOTAL_TOKENS
from service.api.app import create_app
from service.api.routes import CheckedRoute
from tests.servers import AppService, settings_from_env
from tests.service.helpers import config, refusal, row_counts

TWO = ["clade-mini__textkit-1", "clade-mini__ledger-1"]


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


def test_a_value_of_another_json_type_is_refused_not_converted(service: AppService, seed_id: str) -> None:
    # `true` read as 1.0 and "5" as 5 would run a configuration its author did not write.
    for section, field, value, loc in [
        ("selection", "params", {"alpha": True}, ["body", "selection", "params", "alpha"]),
        ("selection", "params", {"alpha": "2"}, ["body", "selection", "params", "alpha"]),
        ("budget", "max_children", "5", ["body", "budget", "max_children"]),
        ("budget", "max_usd", True, ["body", "budget", "max_usd"]),
        ("evaluation", "racing", {"batch": "5"}, ["body", "evaluation", "racing", "batch"]),
    ]:
        body = config(seed_id, **{section: {field: value}})
        locs, message = _refused_everywhere(service, body)
        assert locs == [loc], (field, value)
        assert "valid" in message
    with service.admin as client:  # a whole number where a float is asked is the same number
        fine = config(seed_id, selection={"strategy": "hgm", "params": {"alpha": 2}}, budget={"max_usd": 3})
        assert client.post("/api/runs/plan", json=fine).status_code == 200


def test_an_integer_too_long_to_read_is_a_422_on_every_json_endpoint(
    service: AppService, seed_id: str
) -> None:
    huge = "9" * 5000
    bodies = {
        "/api/runs/plan": f'{{"seed_agent": "{seed_id}", "rng_seed": {huge}}}',
        "/api/runs": f'{{"seed_agent": "{seed_id}", "rng_seed": {huge}}}',
        "/api/dashboard/parse-config": f'{{"text": "name: x", "n": {huge}}}',
    }
    before = row_counts(service.database_url)
    with service.admin as client:
        for path, text in bodies.items():
            response = client.post(path, content=text, headers={"content-type": "application/json"})
            locs, message = refusal(response)
            assert locs == [["body"]] and "more than 4300 digits" in message, path
    assert row_counts(service.database_url) == before


def test_a_key_given_twice_in_a_json_body_is_a_422_not_a_silent_choice(
    service: AppService, seed_id: str
) -> None:
    # json.loads keeps the last of two keys; another parser (a proxy, a log reader) the first.
    twice = f'{{"seed_agent": "{seed_id}", "budget": {{"max_children": 1, "max_children": 900}}}}'
    before = row_counts(service.database_url)
    with service.admin as client:
        for path in ("/api/runs/plan", "/api/runs"):
            response = client.post(path, content=twice, headers={"content-type": "application/json"})
            locs, message = refusal(response)
            assert locs == [["body"]] and message == "the key 'max_children' is given twice in one object"
    assert row_counts(service.database_url) == before


def _api_routes(routes: Sequence[BaseRoute]) -> Iterator[APIRoute]:
    """Every API route, also those of included routers (FastAPI 0.165 keeps them apart)."""
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from _api_routes(included.routes)


def test_every_route_that_reads_a_body_checks_it_first(service: AppService) -> None:
    app = create_app(settings_from_env(service.env))
    with_body = [route for route in _api_routes(app.routes) if route.body_field is not None]
    assert "/api/runs/plan" in {route.path for route in with_body}
    assert [route.path for route in with_body if not isinstance(route, CheckedRoute)] == []


def _heldout_run(seed_id: str, max_evaluations: int, **overrides: Any) -> dict[str, Any]:
    """Two stage tasks; the held-out phase on the other 30 (8 agents, 10 rounds: 63 evaluations)
    and 10 checkpoints (30 each): 363 kept back."""
    evaluation = {
        "heldout": {"sample": 30, "top_k": 8, "rounds": 10},
        "checkpoints": [i / 10 for i in range(1, 11)],
    }
    return config(
        seed_id,
        stages=[{"tasks": TWO}],
        budget={"max_children": 10, "max_evaluations": max_evaluations},
        evaluation=evaluation,
        **overrides,
    )


def test_an_evaluation_budget_the_held_out_reserve_fills_is_refused(
    service: AppService, seed_id: str
) -> None:
    locs, message = _refused_everywhere(service, _heldout_run(seed_id, 300))
    assert locs == [["body", "budget", "max_evaluations"]]
    assert "363 are kept back" in message and "first stage takes 2 and a child's 2 (367 in all)" in message
    assert message.startswith("300 evaluations leave no room for a child")
    assert _refused_everywhere(service, _heldout_run(seed_id, 366))[0] == [
        ["body", "budget", "max_evaluations"]
    ]
    with service.admin as client:
        assert client.post("/api/runs/plan", json=_heldout_run(seed_id, 367)).status_code == 200
        # hgm-paper admits its children unmeasured: one measurement is a child's least.
        paper = {"strategy": "hgm-paper"}
        assert (
            client.post("/api/runs/plan", json=_heldout_run(seed_id, 366, selection=paper)).status_code == 200
        )
        refused = client.post("/api/runs/plan", json=_heldout_run(seed_id, 365, selection=paper))
        assert "(366 in all)" in refusal(refused)[1]
        # An evaluation-only run makes no child: nothing to make room for.
        only = _heldout_run(seed_id, 300)
        only["budget"]["max_children"] = 0
        assert client.post("/api/runs/plan", json=only).status_code == 200


def test_the_upper_bound_of_evaluations_is_held_by_the_evaluation_budget(
    service: AppService, seed_id: str
) -> None:
    # Stages of 2 and 32 tasks, parallelism 2: 11 agents could take 374 evaluations, but no step
    # opens once 5 are sent; the 2 steps then in flight walk their children through 34 each.
    with service.admin as client:
        free = client.post("/api/runs/plan", json=config(seed_id, budget={"max_children": 10}))
        capped = client.post(
            "/api/runs/plan", json=config(seed_id, budget={"max_children": 10, "max_evaluations": 5})
        )
        paper = client.post(
            "/api/runs/plan", json=config(seed_id, selection={"strategy": "hgm-paper"}, budget={})
        )
    assert free.json()["estimate"]["evaluations_max"] == 11 * 34
    assert capped.json()["estimate"]["evaluations_max"] == 5 + 2 * 34
    # hgm-paper fills in 800 evaluations and 800 children (801 x 34 uncapped).
    assert paper.json()["budget"]["max_evaluations"] == 800
    assert paper.json()["estimate"]["evaluations_max"] == 800 + 2 * 34


def test_a_refusal_names_its_field_once(service: AppService, seed_id: str) -> None:
    with service.admin as client:
        for body, field in [
            (
                config(seed_id, selection={"strategy": "hgm", "params": {"alpha": -1}}),
                "selection.params.alpha",
            ),
            (config(seed_id, stages=[{"subset": "nope"}]), "stages.0.subset"),
            (config("0" * 40), "seed_agent"),
            (_heldout_run(seed_id, 300), "budget.max_evaluations"),
        ]:
            response = client.post("/api/runs/plan", json=body)
            (issue,) = response.json()["detail"]
            assert field not in issue["msg"], issue
            shown = describe(response)  # as `clade run start` prints it
            assert shown.startswith(f"{field}: ") and shown.count(field) == 1, shown
