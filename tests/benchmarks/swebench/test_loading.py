"""Options, dataset files and names, and choosing instances: no Docker needed."""

from __future__ import annotations

import json
import sys
import time
import types
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest

from benchmarks import UnknownTask, get_benchmark, known_benchmarks
from benchmarks.swebench import (
    DatasetError,
    Harness,
    SWEbench,
    SWEbenchTask,
    load_rows,
)
from benchmarks.swebench import dataset as dataset_module
from benchmarks.swebench.options import SWEbenchOptions
from contracts.benchmark_options import BenchmarkOptionError

NO_DOCKER = object()  # the image store of benchmarks that must not touch one
IDS = ["clade-fixtures__tinyinv-1", "clade-fixtures__tinyinv-2", "clade-fixtures__wrapkit-1"]


def make(harness: Harness, **options: Any) -> SWEbench:
    return SWEbench(SWEbenchOptions.model_validate(options), images=NO_DOCKER, harness=harness)  # type: ignore[arg-type]


def test_the_registry_builds_it_from_options(offline_dataset: Path) -> None:
    assert "swebench" in known_benchmarks()
    benchmark = get_benchmark("swebench", dataset=str(offline_dataset))
    assert isinstance(benchmark, SWEbench)
    assert [task.instance_id for task in benchmark.tasks()] == IDS


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, r"dataset: Field required"),
        ({"dataset": "x.jsonl", "datset": "y"}, r"datset: unknown option of swebench \(known: dataset,"),
        ({"dataset": "x.jsonl", "instance_ids": []}, r"instance_ids: List should have at least 1 item"),
        ({"dataset": "x.jsonl", "instance_ids": ["a"], "subset": "b"}, r"either 'instance_ids' or 'subset'"),
        ({"dataset": "x.jsonl", "subsets": {"all": ["a"]}}, r"'all' is built in"),
        ({"dataset": "x.jsonl", "cpus": 0}, r"cpus: Input should be greater than 0"),
    ],
)
def test_bad_options_name_the_field(options: dict[str, Any], message: str) -> None:
    with pytest.raises(BenchmarkOptionError, match=message) as caught:
        get_benchmark("swebench", **options)
    assert isinstance(caught.value, ValueError)


def test_tasks_are_swebench_instances(harness: Harness, offline_dataset: Path) -> None:
    task = make(harness, dataset=str(offline_dataset)).tasks()[0]
    assert isinstance(task, SWEbenchTask)
    assert task.repo_path == "/testbed"
    assert task.instance_format == harness.instance_format
    assert task.FAIL_TO_PASS == [  # decoded from the dataset's JSON strings
        "tests/test_stock.py::test_removing_more_than_in_stock_raises",
        "tests/test_stock.py::test_a_refused_removal_changes_nothing",
    ]
    assert task.image and task.patch and task.test_patch and task.problem_statement


def test_choose_by_instance_ids_in_their_order(harness: Harness, offline_dataset: Path) -> None:
    benchmark = make(harness, dataset=str(offline_dataset), instance_ids=[IDS[2], IDS[0]])
    assert [task.instance_id for task in benchmark.tasks()] == [IDS[2], IDS[0]]
    assert benchmark.subsets()["all"] == [IDS[2], IDS[0]]
    with pytest.raises(UnknownTask, match=r"instance_ids: the dataset has no instance nope__1"):
        make(harness, dataset=str(offline_dataset), instance_ids=[IDS[0], "nope__1"])


def test_named_subsets(harness: Harness, offline_dataset: Path) -> None:
    options = {"dataset": str(offline_dataset), "subsets": {"first": [IDS[0]], "late": IDS[1:]}}
    everything = make(harness, **options)
    subsets = everything.subsets()
    assert subsets["all"] == IDS
    assert subsets["first"] == [IDS[0]]
    assert (
        subsets["repo:clade-fixtures/tinyinv" if harness.major == 5 else "repo:pytest-dev/pytest"][0]
        == IDS[0]
    )
    late = make(harness, **options, subset="late")
    assert [task.instance_id for task in late.tasks()] == IDS[1:]
    assert "first" not in late.subsets()  # none of its instances is selected
    with pytest.raises(UnknownTask, match=r"no subset 'middle' \(defined in `subsets`: first, late"):
        make(harness, **options, subset="middle")
    with pytest.raises(UnknownTask, match=r"subsets.first: the dataset has no instance x__1"):
        make(harness, dataset=str(offline_dataset), subsets={"first": ["x__1"]})


def test_json_jsonl_parquet_and_folder_give_the_same_rows(
    tmp_path: Path, offline_rows: list[dict[str, Any]]
) -> None:
    (tmp_path / "test.json").write_text(json.dumps(offline_rows))
    (tmp_path / "rows.jsonl").write_text("\n".join(json.dumps(row) for row in offline_rows) + "\n\n")
    pq.write_table(pa.Table.from_pylist(offline_rows), tmp_path / "rows.parquet")
    for name in ("test.json", "rows.jsonl", "rows.parquet"):
        assert load_rows(str(tmp_path / name)) == offline_rows, name
    assert load_rows(str(tmp_path), split="test") == offline_rows  # <folder>/<split>.json


def test_parquet_without_pyarrow_or_pandas_says_what_to_install(
    tmp_path: Path, offline_rows: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    pq.write_table(pa.Table.from_pylist(offline_rows), tmp_path / "rows.parquet")
    for module in ("pyarrow", "pyarrow.parquet", "pandas"):
        monkeypatch.setitem(sys.modules, module, None)  # makes `import` fail
    with pytest.raises(DatasetError, match=r"needs pyarrow \(or pandas\): pip install pyarrow"):
        load_rows(str(tmp_path / "rows.parquet"))


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.jsonl", None, r"missing.jsonl does not exist"),
        ("bad.jsonl", '{"instance_id": "a"}\n{oops\n', r"bad.jsonl:2: not valid JSON"),
        ("object.json", '{"instance_id": "a"}', r"expected a JSON list of instances, found dict"),
        ("numbers.json", "[1, 2]", r"instance 0 is a int, not an object"),
        ("twice.jsonl", '{"instance_id": "a"}\n{"instance_id": "a"}\n', r"instance 'a' appears twice"),
    ],
)
def test_bad_dataset_files(
    harness: Harness, tmp_path: Path, name: str, content: str | None, message: str
) -> None:
    if content is not None:
        (tmp_path / name).write_text(content)
    with pytest.raises(DatasetError, match=message):
        make(harness, dataset=str(tmp_path / name))


def test_a_dataset_name_without_network_fails_within_its_timeout(harness: Harness) -> None:
    started = time.monotonic()
    with pytest.raises(DatasetError, match=r"SWE-bench/SWE-bench_Lite.*(did not load within|cannot load)"):
        make(harness, dataset="lite", dataset_timeout_s=3)
    assert time.monotonic() - started < 10


def test_a_hanging_hub_is_abandoned_at_the_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    hang = [sys.executable, "-c", "import time; time.sleep(60)"]
    monkeypatch.setattr(dataset_module, "loader_command", lambda name, split, out: hang)
    started = time.monotonic()
    with pytest.raises(DatasetError, match=r"did not load within 0.5s; is there network\?.*HF_HUB_OFFLINE=1"):
        load_rows("SWE-bench/SWE-bench_Verified", timeout_s=0.5)
    assert time.monotonic() - started < 5


def test_an_unreachable_hub_says_how_to_run_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    fail = [
        sys.executable,
        "-c",
        "import sys; sys.exit(\"ConnectionError: Couldn't reach 'org/set' on the Hub\")",
    ]
    monkeypatch.setattr(dataset_module, "loader_command", lambda name, split, out: fail)
    with pytest.raises(DatasetError, match=r"Couldn't reach 'org/set'.*save the dataset as a JSON, JSONL"):
        load_rows("org/set", split="dev")


def test_the_loader_child_writes_the_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [{"instance_id": "a__1", "created_at": "2025-01-01"}]
    fake = types.ModuleType("datasets")
    fake.load_dataset = lambda name, split: rows  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "datasets", fake)
    assert dataset_module._main(["org/set", "test", str(tmp_path / "rows.jsonl")]) == 0
    assert load_rows(str(tmp_path / "rows.jsonl")) == rows
