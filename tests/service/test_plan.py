"""plan_run: a run configuration validated once into a typed plan, or refused at a field path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from benchmarks.catalog import BenchmarkCatalog
from benchmarks.polyglot.options import PolyglotOptions
from benchmarks.swebench.options import SWEbenchOptions
from contracts.benchmark_options import BenchmarkConfig
from contracts.config import ConfigFieldError, RunConfig
from contracts.jobs import EvaluateJob
from service.db.models import Run
from service.plan import plan_run, stored_plan
from service.selection import Best, Hgm

SEED = "a" * 40
VISIBILITY_S = 7200
T = ["clade-mini__textkit-1", "clade-mini__spanlib-1", "clade-mini__ledger-1"]


@pytest.fixture(scope="module")
def catalog() -> BenchmarkCatalog:
    return BenchmarkCatalog()


def config(**changes: Any) -> RunConfig:
    return RunConfig.model_validate({"seed_agent": SEED} | changes)


def field_of(error: ValidationError) -> list[str]:
    return [".".join(str(part) for part in e["loc"]) for e in error.errors()]


def test_a_plan_holds_typed_stages_strategy_and_time_limits(catalog: BenchmarkCatalog) -> None:
    plan = plan_run(
        config(
            stages=[{"tasks": [T[0], T[1], T[0]], "threshold": 0.5}, {"subset": "mini-5"}, {"sample": 3}],
            selection={"strategy": "hgm", "params": {"alpha": 0.8}},
            limits={"solve_timeout_s": 100, "test_timeout_s": 50, "improve_timeout_s": 200, "overhead_s": 10},
        ),
        catalog=catalog,
        visibility_timeout_s=VISIBILITY_S,
    )
    assert plan.stages[0].task_ids == (T[0], T[1]) and plan.stages[0].threshold == 0.5
    assert len(plan.stages[1].task_ids) == 5 and len(plan.stages[2].task_ids) == 3
    assert isinstance(plan.strategy, Hgm) and plan.strategy.alpha == 0.8
    assert (plan.time_limits.evaluate_s, plan.time_limits.improve_s) == (160, 310)
    assert plan.benchmark == BenchmarkConfig(name="clade-mini", options={})
    assert plan.improver_for("b" * 40) == "b" * 40


def test_a_sample_is_the_same_for_the_same_seed(catalog: BenchmarkCatalog) -> None:
    def sample(rng_seed: int) -> tuple[str, ...]:
        stages = [{"sample": 4}]
        return (
            plan_run(
                config(stages=stages, rng_seed=rng_seed), catalog=catalog, visibility_timeout_s=VISIBILITY_S
            )
            .stages[0]
            .task_ids
        )

    assert sample(1) == sample(1)
    assert len({sample(seed) for seed in range(5)}) > 1


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"stages": [{"tasks": [T[0], "clade-mini__nope-1"]}]}, "stages.0.tasks"),
        ({"stages": [{"subset": "all"}, {"subset": "mini-500"}]}, "stages.1.subset"),
        ({"selection": {"strategy": "roulette"}}, "selection.strategy"),
        ({"evaluation": {"policy": "bandit"}}, "evaluation.policy"),
        ({"selection": {"strategy": "hgm", "params": {"alpah": 2}}}, "selection.params.alpah"),
        ({"selection": {"strategy": "score_child_prop", "params": {"m": 3}}}, "selection.params.m"),
        ({"limits": {"solve_timeout_s": 7200}}, "limits"),
        (
            {"benchmark": {"name": "polyglot", "options": {"exercises": ["nope"]}}},
            "benchmark.options.exercises.0",
        ),
        (
            {"benchmark": {"name": "polyglot", "options": {"languages": ["go"]}}},
            "benchmark.options.languages.0",
        ),
        ({"benchmark": {"name": "swebench", "options": {"dataset": "/no/such.jsonl"}}}, "benchmark.options"),
    ],
)
def test_a_config_that_cannot_run_names_the_field(
    catalog: BenchmarkCatalog, changes: dict[str, Any], field: str
) -> None:
    with pytest.raises(ConfigFieldError) as caught:
        plan_run(config(**changes), catalog=catalog, visibility_timeout_s=VISIBILITY_S)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}: ")


def test_the_broker_visibility_timeout_bounds_the_limits(catalog: BenchmarkCatalog) -> None:
    with pytest.raises(ConfigFieldError, match="visibility timeout of 1000s") as caught:
        plan_run(config(), catalog=catalog, visibility_timeout_s=1000)
    assert caught.value.field == "limits"


# Each benchmark's options model: known options typed, unknown ones refused by name, when planned.
@pytest.mark.parametrize(
    ("bench", "field"),
    [
        ({"name": "clade-mini", "options": {"size": 5}}, "benchmark.options.size"),
        ({"name": "swebench", "options": {"dataset": "x.jsonl", "datset": "y"}}, "benchmark.options.datset"),
        ({"name": "swebench", "options": {}}, "benchmark.options.dataset"),
        ({"name": "swebench", "options": {"dataset": "x.jsonl", "cpus": 0}}, "benchmark.options.cpus"),
        (
            {"name": "swebench", "options": {"dataset": "x", "instance_ids": ["a"], "subset": "b"}},
            "benchmark.options",
        ),
        ({"name": "polyglot", "options": {"langauges": ["python"]}}, "benchmark.options.langauges"),
        ({"name": "polyglot", "options": {"languages": ["cobol"]}}, "benchmark.options.languages.0"),
        ({"name": "polyglot", "options": {"root": "/no/such/folder"}}, "benchmark.options.root"),
        ({"name": "no-such-bench"}, "benchmark.name"),
    ],
)
def test_benchmark_options_are_typed_per_benchmark(
    catalog: BenchmarkCatalog, bench: dict[str, Any], field: str
) -> None:
    with pytest.raises(ConfigFieldError) as caught:
        plan_run(config(benchmark=bench), catalog=catalog, visibility_timeout_s=VISIBILITY_S)
    assert field in [".".join(str(part) for part in loc) for loc, _, _ in caught.value.issues]


def test_unknown_options_list_the_known_ones(catalog: BenchmarkCatalog) -> None:
    with pytest.raises(ConfigFieldError, match=r"unknown option of polyglot \(known: root, languages"):
        plan_run(
            config(benchmark={"name": "polyglot", "options": {"langauges": ["python"]}}),
            catalog=catalog,
            visibility_timeout_s=VISIBILITY_S,
        )


def test_each_benchmark_gets_its_own_options_model(catalog: BenchmarkCatalog, tmp_path: Path) -> None:
    assert config().benchmark.name == "clade-mini"  # the default benchmark
    assert config(benchmark={}).benchmark.name == "clade-mini"
    swebench = catalog.resolve(
        config(benchmark={"name": "swebench", "options": {"dataset": "lite", "cpus": 2}}).benchmark
    ).options
    assert isinstance(swebench, SWEbenchOptions)
    assert (swebench.dataset, swebench.cpus, swebench.split) == ("lite", 2.0, "test")
    polyglot = catalog.resolve(
        config(benchmark={"name": "polyglot", "options": {"root": str(tmp_path)}}).benchmark
    ).options
    assert isinstance(polyglot, PolyglotOptions) and polyglot.root == tmp_path.resolve()


def test_a_job_carries_typed_options_through_json(catalog: BenchmarkCatalog) -> None:
    benchmark = config(benchmark={"name": "swebench", "options": {"dataset": "lite", "instance_ids": ["a"]}})
    job = EvaluateJob.model_validate(
        {
            "run_id": "r",
            "limits": {},
            "budget": {},
            "secret": "s" * 32,
            "evaluation_id": "e",
            "agent_id": SEED,
            "task_id": "a",
            "solve_model": "m",
            "benchmark": catalog.resolve(benchmark.benchmark).config().model_dump(mode="json"),
        }
    )
    again = EvaluateJob.model_validate(json.loads(job.model_dump_json()))
    options = catalog.resolve(again.benchmark).options
    assert isinstance(options, SWEbenchOptions) and options.instance_ids == ["a"]


def test_a_stored_run_gives_back_the_same_plan(catalog: BenchmarkCatalog) -> None:
    plan = plan_run(
        config(stages=[{"tasks": T[:2], "threshold": 0.5}, {"tasks": T}], selection={"strategy": "best"}),
        catalog=catalog,
        visibility_timeout_s=VISIBILITY_S,
    )
    run = Run(id="stored-plan-test", config=plan.config.model_dump(mode="json"), stage_tasks=plan.stage_tasks)
    again = stored_plan(run)
    assert again.stages == plan.stages and again.config == plan.config
    assert isinstance(again.strategy, Best) and again.time_limits == plan.time_limits
    assert stored_plan(run) is again  # built once per run


def test_a_long_list_of_unknown_tasks_is_named_briefly(catalog: BenchmarkCatalog) -> None:
    """A hundred thousand wrong ids give a readable refusal: each id once, the first ten, a count."""
    wrong = [f"clade-mini__nope-{n % 50}" for n in range(100_000)]
    with pytest.raises(ConfigFieldError) as caught:
        plan_run(config(stages=[{"tasks": wrong}]), catalog=catalog, visibility_timeout_s=VISIBILITY_S)
    message = str(caught.value)
    assert "clade-mini__nope-0, clade-mini__nope-1," in message
    assert message.endswith("and 40 more") and len(message) < 500
