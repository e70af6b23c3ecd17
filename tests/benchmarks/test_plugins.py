"""Benchmark plugins: installed distributions with a `clade.benchmarks` entry point, found by
name, and refused clearly when broken or when two claim one name."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest

from benchmarks.base import Benchmark
from benchmarks.catalog import BenchmarkCatalog
from benchmarks.registry import BenchmarkRegistry, DuplicateBenchmark, PluginError
from benchmarks.spec import BenchmarkSpec, LoadContext
from contracts.benchmark_options import BenchmarkConfig, BenchmarkOptionError, Options
from contracts.config import ConfigFieldError, RunConfig
from contracts.jobs import EvaluateJob
from service.plan import plan_run
from tests.benchmarks.plugin_package import (
    WORDCOUNT,
    WORDCOUNT_TASK,
    write_entry_point,
    write_wordcount_plugin,
)
from worker.errors import InfrastructureError
from worker.evaluate import evaluate


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on sys.path, as `pip install --target` and PYTHONPATH make one."""
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    yield folder
    sys.modules.pop("clade_wordcount", None)  # the next test's plugin is another folder's


def test_an_installed_plugin_is_named_like_clades_own(site: Path) -> None:
    write_wordcount_plugin(site)
    registry = BenchmarkRegistry.installed()
    assert registry.names() == [
        "clade-mini",
        "swebench",
        "swebench-pro",
        "polyglot",
        "folder",
        "harbor",
        WORDCOUNT,
    ]
    benchmark = registry.build(BenchmarkConfig(name=WORDCOUNT, options={"copies": 2}))
    assert [task.instance_id for task in benchmark.tasks()] == [WORDCOUNT_TASK, "wordcount__split-2"]
    # Stored as its options model spells it out.
    assert registry.resolve(BenchmarkConfig(name=WORDCOUNT)).config().options == {"copies": 1}
    listed = {entry["name"]: entry for entry in BenchmarkCatalog(registry=registry).describe()}
    assert listed[WORDCOUNT]["tasks"] == 1 and listed[WORDCOUNT]["note"] is None


def test_a_plugins_options_are_checked_by_its_own_model(site: Path) -> None:
    write_wordcount_plugin(site)
    registry = BenchmarkRegistry.installed()
    with pytest.raises(BenchmarkOptionError) as caught:
        registry.resolve(BenchmarkConfig(name=WORDCOUNT, options={"copies": 0, "copeis": 2}))
    assert [problem.path for problem in caught.value.problems] == ["copeis", "copies"]
    assert str(caught.value).startswith("copeis: unknown option of wordcount (known: copies); copies: ")


def test_an_unknown_name_lists_the_known_ones_and_imports_nothing(site: Path) -> None:
    write_wordcount_plugin(site)
    registry = BenchmarkRegistry.installed()
    for name in ("nope", "benchmarks.clade_mini.registration:BENCHMARK", "clade_wordcount:BENCHMARK", "os"):
        with pytest.raises(BenchmarkOptionError) as caught:
            registry.resolve(BenchmarkConfig(name=name))
        assert caught.value.field == "name"
        assert str(caught.value) == (
            f"name: unknown benchmark {name!r}; "
            "known: clade-mini, swebench, swebench-pro, polyglot, folder, harbor, wordcount"
        )


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("clade_no_such_module:BENCHMARK", "ModuleNotFoundError: No module named 'clade_no_such_module'"),
        ("clade_wordcount:NOTHING", "AttributeError"),
        ("clade_wordcount:WordcountOptions", "gives a ModelMetaclass, not a benchmarks.spec.BenchmarkSpec"),
        ("clade_wordcount:BENCHMARK", "gives the spec of 'wordcount': an entry point's name must be"),
    ],
)
def test_a_broken_entry_point_is_named_and_the_others_still_work(site: Path, value: str, says: str) -> None:
    write_wordcount_plugin(site)
    write_entry_point(site, dist="clade-broken", name="broken", value=value)
    registry = BenchmarkRegistry.installed()
    with pytest.raises(PluginError) as caught:
        registry.spec("broken")
    message = str(caught.value)
    assert message.startswith(
        f"benchmark 'broken' cannot load: entry point 'broken' = {value} (distribution clade-broken 1.0)"
    )
    assert says in message
    with pytest.raises(BenchmarkOptionError) as refused:  # as a run configuration gets it
        registry.resolve(BenchmarkConfig(name="broken"))
    assert refused.value.field == "name" and refused.value.problems[0].kind == "benchmark_unavailable"
    listed = {entry["name"]: entry for entry in BenchmarkCatalog(registry=registry).describe()}
    assert listed["broken"]["tasks"] is None and "clade-broken" in listed["broken"]["note"]
    assert listed["clade-mini"]["tasks"] and listed[WORDCOUNT]["tasks"] == 1


def test_two_distributions_claiming_one_name_are_refused_by_name(site: Path) -> None:
    write_wordcount_plugin(site)
    write_entry_point(site, dist="clade-wordcount-fork", name=WORDCOUNT, value="clade_wordcount:BENCHMARK")
    write_entry_point(site, dist="clade-mini-again", name="clade-mini", value="clade_wordcount:BENCHMARK")
    registry = BenchmarkRegistry.installed()
    for name, claims in (
        (WORDCOUNT, ["distribution clade-wordcount 1.0", "distribution clade-wordcount-fork 1.0"]),
        ("clade-mini", ["(Clade)", "distribution clade-mini-again 1.0"]),
    ):
        with pytest.raises(DuplicateBenchmark) as caught:
            registry.spec(name)
        message = str(caught.value)
        assert message.startswith(f"benchmark {name!r} is registered 2 times, by entry point {name!r}")
        assert all(claim in message for claim in claims) and message.endswith("uninstall all but one")
    assert len(registry.build(BenchmarkConfig(name="polyglot")).tasks()) > 0  # the others still work


def test_a_plugin_factory_that_fails_is_a_refusal_naming_it_not_a_crash() -> None:
    def crashes(_options: Options, _context: LoadContext) -> Benchmark:
        raise KeyError("no-such-column")

    registry = BenchmarkRegistry.installed().with_specs(BenchmarkSpec("crashes", Options, crashes))
    catalog = BenchmarkCatalog(registry=registry)
    with pytest.raises(
        PluginError, match=r"'crashes' \(registered from Python\) failed to build the benchmark: KeyError"
    ):
        catalog.get(BenchmarkConfig(name="crashes"))
    config = RunConfig.model_validate({"seed_agent": "a" * 40, "benchmark": {"name": "crashes"}})
    with pytest.raises(ConfigFieldError) as caught:
        plan_run(config, catalog=catalog, visibility_timeout_s=7200)
    assert caught.value.field == "benchmark.options" and "crashes cannot load" in str(caught.value)


def test_a_worker_without_the_plugin_says_so_and_the_job_is_retried() -> None:
    """The service had the plugin, this worker has not: an infrastructure error (retried by
    Celery, then reported on the evaluation with its cause), never a verdict."""
    job = EvaluateJob.model_validate(
        {
            "run_id": "r",
            "limits": {},
            "budget": {},
            "secret": "s" * 32,
            "evaluation_id": "e",
            "agent_id": "a" * 40,
            "task_id": WORDCOUNT_TASK,
            "solve_model": "m",
            "benchmark": {"name": WORDCOUNT, "options": {"copies": 1}},
        }
    )
    ctx = mock.Mock(catalog=BenchmarkCatalog(registry=BenchmarkRegistry.installed()))
    with pytest.raises(
        InfrastructureError, match=r"this worker cannot load the benchmark 'wordcount': name: unknown"
    ):
        evaluate(ctx, job)
    ctx.client.agent_code.assert_not_called()
