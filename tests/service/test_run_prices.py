"""A run's prices: every model it calls is priced when it is planned, and the prices are stored.

(Issue 20, "money that is right".) On main a run naming a model nobody priced was accepted and
every call it made cost $0, flagged only in the usage records; the run stored no prices.
"""

from __future__ import annotations

from typing import Any

from tests.servers import AppService
from tests.service.helpers import config


def test_a_model_with_no_price_is_refused_at_plan_time_naming_its_purpose(
    service: AppService, seed_id: str
) -> None:
    """Fails on main (the run was created: 201)."""
    unpriced = config(seed_id, models={"solve": "scripted", "improve": "my-local-model"})
    with service.admin as client:
        created = client.post("/api/runs", json=unpriced)
        previewed = client.post("/api/runs/plan", json=unpriced)
        listed = client.get("/api/runs").json()["total"]
    for answer in (created, previewed):
        assert answer.status_code == 422, answer.text
        detail = answer.json()["detail"][0]
        assert detail["loc"] == ["body", "models", "improve"]
        assert "my-local-model" in detail["msg"] and "models.prices" in detail["msg"]
    assert listed == 0


def test_an_unpriced_judge_is_refused_at_its_epoch(service: AppService, seed_id: str) -> None:
    """Fails on main (the run was created)."""
    body = config(
        seed_id,
        budget={"max_children": 3},
        epochs=[{"after_steps": 1, "judge": {"model": "judge-9000", "rubric": "is it tidy?"}}],
    )
    with service.admin as client:
        answer = client.post("/api/runs", json=body)
    assert answer.status_code == 422, answer.text
    assert answer.json()["detail"][0]["loc"] == ["body", "epochs", 0, "judge", "model"]


def test_a_declared_price_is_taken_and_the_run_stores_the_price_of_every_model(
    service: AppService, seed_id: str
) -> None:
    """Fails on main (`models.prices` was an unknown field: 422)."""
    body = config(
        seed_id,
        models={
            "solve": "smollm2",
            "improve": "gpt-4o-mini",
            "prices": {"smollm2": {"prompt": 0, "completion": 0}},
        },
    )
    with service.admin as client:
        answer = client.post("/api/runs", json=body)
        assert answer.status_code == 201, answer.text
        shown = client.get(f"/api/runs/{answer.json()['id']}").json()
    prices = shown["config"]["models"]["prices"]
    # The run's own price, and the table's for the models it did not price (a snapshot: a later
    # change of the service's table does not change what this run's calls cost).
    assert prices["smollm2"] == {"prompt": 0.0, "completion": 0.0, "cached_prompt": None, "reasoning": None}
    assert prices["gpt-4o-mini"]["prompt"] == 0.15 and prices["gpt-4o-mini"]["completion"] == 0.6
    assert prices["scripted"]["prompt"] == 1.0  # diagnose, by default


def test_a_bad_declared_price_names_its_field(service: AppService, seed_id: str) -> None:
    body = config(seed_id, models={"prices": {"m": {"prompt": -1, "completion": 0}}})
    with service.admin as client:
        answer = client.post("/api/runs", json=body)
    assert answer.status_code == 422
    assert answer.json()["detail"][0]["loc"] == ["body", "models", "prices", "m", "prompt"]


def test_the_demo_at_a_real_endpoint_does_not_charge_the_stand_ins_price() -> None:
    """Fails on main: `clade demo` against a real endpoint billed the free local model at the
    scripted stand-in's invented price ($0.0117 for a one-child demo)."""
    from benchmarks.catalog import BenchmarkCatalog
    from cli.demo import SCRIPTED, DemoModel, demo_config
    from contracts.config import RunConfig
    from service.plan import plan_run

    def stored(model: DemoModel) -> dict[str, Any]:
        config = RunConfig.model_validate(demo_config("a" * 40, 1, model))
        plan = plan_run(config, catalog=BenchmarkCatalog(), visibility_timeout_s=10**6)
        return plan.config.models.prices[model.name].model_dump()

    # At a real endpoint the demo asks for the model it is given, at the price it declares.
    local = stored(DemoModel("smollm2", (0.0, 0.0)))
    assert local["prompt"] == 0.0 and local["completion"] == 0.0
    assert stored(SCRIPTED)["prompt"] == 1.0  # the stand-in keeps its price: demos show costs
