"""Which swebench versions and instance formats are graded, and how the others are refused."""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.swebench import (
    Harness,
    HarnessUnavailable,
    SWEbench,
    SWEbenchOptions,
    UnsupportedInstance,
    load_harness,
)
from benchmarks.swebench.tasks import to_task
from tests.benchmarks.swebench.conftest import Repos
from tests.benchmarks.swebench.fixture_set import instance_rows, write_jsonl

OTHER_FORMAT = {"swebench-5": "swebench-4", "swebench-4": "swebench-5"}


@pytest.fixture
def row(offline_rows: list[dict[str, Any]]) -> dict[str, Any]:
    return dict(offline_rows[0])


def test_the_installed_version_is_supported(harness: Harness) -> None:
    assert harness.version == importlib.metadata.version("swebench")
    assert harness.major in (4, 5)


@pytest.mark.parametrize("version", ["3.0.17", "4.0.1", "6.0.0"])
def test_other_versions_are_refused(version: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.metadata, "version", lambda name: version)
    load_harness.cache_clear()
    try:
        with pytest.raises(HarnessUnavailable, match=rf"swebench {version} is installed; .*>=4.0.3,<6"):
            load_harness()
    finally:
        load_harness.cache_clear()


def test_a_missing_package_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    load_harness.cache_clear()
    try:
        with pytest.raises(HarnessUnavailable, match=r"needs the swebench package: pip install"):
            load_harness()
    finally:
        load_harness.cache_clear()


def test_the_other_format_is_refused_with_what_to_do(harness: Harness, repos: Repos, tmp_path: Path) -> None:
    other = instance_rows(OTHER_FORMAT[harness.instance_format], repos.commits)
    dataset = write_jsonl(other, tmp_path / "other.jsonl")
    expected = (
        r"Install swebench>=5,<6" if harness.major == 4 else r"no image, eval_script, log_parser, eval_type"
    )
    with pytest.raises(UnsupportedInstance, match=rf"clade-fixtures__tinyinv-1: .*{expected}"):
        SWEbench(SWEbenchOptions(dataset=str(dataset)), harness=harness)


def test_a_row_without_swebench_fields_is_refused(harness: Harness, row: dict[str, Any]) -> None:
    del row["test_patch"], row["FAIL_TO_PASS"]
    with pytest.raises(UnsupportedInstance, match=r"not a SWE-bench instance: no test_patch, FAIL_TO_PASS"):
        to_task(row, harness)


def test_binary_test_assets_are_refused(harness: Harness, row: dict[str, Any]) -> None:
    row["image_assets"] = json.dumps({"test_patch": [{"path": "a.png", "url": "https://example.org/a.png"}]})
    with pytest.raises(UnsupportedInstance, match=r"needs image_assets .* without network"):
        to_task(row, harness)


def test_bad_fields_are_refused_before_any_run(harness: Harness, row: dict[str, Any]) -> None:
    if harness.major == 5:
        with pytest.raises(UnsupportedInstance, match=r"log_parser 'parse_log_nope' is not in swebench"):
            to_task({**row, "log_parser": "parse_log_nope"}, harness)
        with pytest.raises(UnsupportedInstance, match=r"eval_type 'sometimes' is not one of"):
            to_task({**row, "eval_type": "sometimes"}, harness)
        with pytest.raises(UnsupportedInstance, match=r"a swebench 5.x instance needs eval_type"):
            to_task({key: value for key, value in row.items() if key != "eval_type"}, harness)
    else:
        with pytest.raises(
            UnsupportedInstance, match=r"no test spec for repo 'nobody/nothing' version '0.1'"
        ):
            to_task({**row, "repo": "nobody/nothing", "version": "0.1"}, harness)


def test_image_names(harness: Harness, row: dict[str, Any]) -> None:
    if harness.major == 5:  # named by the instance
        assert to_task(row, harness, namespace="ignored").image == row["image"]
    else:  # derived as the 4.x harness names them
        assert to_task(row, harness).image == "sweb.eval.x86_64.clade-fixtures__tinyinv-1:latest"
        named = to_task(row, harness, namespace="swebench").image
        assert named == "swebench/sweb.eval.x86_64.clade-fixtures_1776_tinyinv-1:latest"
