"""Run configurations a hostile or careless client sends: numbers the database cannot sum, priors
that hang a draw, integers too long to read, budgets that leave no room for a child. Each is
refused at plan time with a 422 naming its field once, and nothing is stored."""

from __future__ import annotations

from cli.client import describe
from tests.servers import AppService
from tests.service.helpers import config


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
