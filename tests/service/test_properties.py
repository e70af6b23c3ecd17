"""Property test: random configurations and patches never make git and the database disagree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import tar_of, write_agent
from tests.servers import AppService, app_service, free_port, service_env
from tests.service.helpers import agent_refs, core_patch, open_step_in, row_counts

values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 10**7),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=8),
)
config_keys = st.sampled_from(
    ["name", "stages", "budget", "selection", "improver", "parallelism", "rng_seed", "bogus", "limits"]
)
budget = st.fixed_dictionaries(
    {}, optional={"max_children": values, "max_usd": values, "max_tokens": values, "surprise": values}
)
stages = st.lists(
    st.fixed_dictionaries(
        {},
        optional={"tasks": st.lists(st.text(max_size=5), max_size=3), "subset": values, "threshold": values},
    ),
    max_size=3,
)


@st.composite
def configs(draw: st.DrawFn) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for key in draw(st.lists(config_keys, unique=True, max_size=5)):
        config[key] = draw(budget if key in ("budget", "limits") else stages if key == "stages" else values)
    return config


@st.composite
def patches(draw: st.DrawFn) -> str:
    valid = core_patch(draw(st.integers(3, 45)), draw(st.text(alphabet="abc xyz", max_size=20)))
    kind = draw(st.sampled_from(["valid", "truncated", "garbage", "shifted", "empty"]))
    if kind == "valid":
        return valid
    if kind == "truncated":
        return valid[: draw(st.integers(0, len(valid)))]
    if kind == "shifted":
        return valid.replace("@@ -", "@@ -9")
    if kind == "empty":
        return ""
    return draw(st.text(max_size=200))


def test_random_configs_and_patches_keep_the_archive_consistent(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'clade.db'}"
    with app_service(service_env(tmp_path / "data", url, free_port())) as service:
        check_random_requests(service, url, tmp_path)


def check_random_requests(service: AppService, url: str, tmp_path: Path) -> None:
    root = write_agent(tmp_path / "seed", {"tiny/core.py": "".join(f"line {i}\n" for i in range(50))})
    with service.admin as client:
        seed = client.post("/api/seeds", files={"file": ("s.tgz", tar_of(root))}).json()["id"]
        run_id = client.post("/api/runs", json={"seed_agent": seed}).json()["id"]

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(config=configs(), patch=patches(), with_seed=st.booleans())
    def check(config: dict[str, Any], patch: str, with_seed: bool) -> None:
        if with_seed:
            config = config | {"seed_agent": seed}
        before = row_counts(url)
        with service.admin as client:
            created = client.post("/api/runs", json=config)
        assert created.status_code in (201, 422), created.text
        if created.status_code == 422:
            assert row_counts(url) == before
            assert all(error["loc"] for error in created.json()["detail"])
        step = open_step_in(url, run_id=run_id, parent_id=seed)
        before = row_counts(url)
        with service.worker as worker:
            response = worker.post(f"/api/worker/steps/{step}/child", json={"patch": patch})
        assert response.status_code in (200, 422), response.text
        if response.status_code == 422:
            assert row_counts(url) == before
        with service.admin as client:
            agents = {a["id"] for a in client.get("/api/agents", params={"limit": 1000}).json()["items"]}
        assert agent_refs(service.data_dir) == agents

    check()
