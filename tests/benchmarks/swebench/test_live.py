"""SWE-bench-Live rows through the swebench benchmark: per-row test commands and parser name,
the image named by the row or by Live's namespace, graded as a swebench 5.x instance.

The rows are the fixture instances in Live's format (`test_cmds`, `log_parser: pytest`, and
`docker_image` for the Docker runs); the fixture images stand in for Live's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import TestStatus, find_task
from benchmarks.swebench import Harness, SWEbench, SWEbenchOptions, SWEbenchTask, UnsupportedInstance
from benchmarks.swebench.dataset import ALIASES
from benchmarks.swebench.live import as_v5_row, is_live_row
from benchmarks.swebench.patches import touched_paths
from sandbox.base import SandboxBackend
from sandbox.docker_images import DockerImages
from tests.benchmarks.swebench.conftest import FixtureSet
from tests.benchmarks.swebench.fixture_set import V4_REPO, instances, write_jsonl

V5_ONLY = ("image", "eval_script", "log_parser", "eval_type", "version", "environment_setup_commit")


def live_rows(rows: list[dict[str, Any]], images: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The fixture rows as SWE-bench-Live publishes rows: no eval script, its test commands."""
    by_id = {instance.meta["instance_id"]: instance for instance in instances()}
    live = []
    for row in rows:
        instance = by_id[row["instance_id"]]
        tests = " ".join(touched_paths(row["test_patch"]))
        converted = {key: value for key, value in row.items() if key not in V5_ONLY}
        converted |= {
            "repo": instance.meta["repo"],  # Live repos are in no swebench table
            "FAIL_TO_PASS": json.loads(row["FAIL_TO_PASS"]),  # lists in Live's rows
            "PASS_TO_PASS": json.loads(row["PASS_TO_PASS"]),
            "test_cmds": [f"python -m pytest -rA -p no:cacheprovider {tests}"],
            "log_parser": "pytest",
        }
        if images is not None:
            converted["docker_image"] = images[instance.repo_name]
        live.append(converted)
    return live


def test_live_rows_load_as_5x_instances(
    harness: Harness, offline_rows: list[dict[str, Any]], tmp_path: Path
) -> None:
    if harness.major != 5:
        pytest.fail(f"these rows need swebench 5.x; installed: {harness.version}")
    dataset = write_jsonl(live_rows(offline_rows), tmp_path / "live.jsonl")
    bench = SWEbench(SWEbenchOptions(dataset=str(dataset)), harness=harness)
    task = bench.tasks()[0]
    assert isinstance(task, SWEbenchTask)
    assert task.instance_format == "swebench-5" and task.log_parser == "parse_log_pytest"
    # No docker_image: Live's namespace, `__` written `_1776_`.
    assert (
        task.image
        == f"starryzhang/sweb.eval.x86_64.{task.instance_id.replace('__', '_1776_').lower()}:latest"
    )
    script = task.eval_script
    start, end = script.index(">>>>> Start Test Output"), script.index(">>>>> End Test Output")
    assert "python -m pytest -rA -p no:cacheprovider" in script[start:end]
    assert script.index("git apply --verbose --reject") < start
    assert ALIASES["live"] == "SWE-bench-Live/SWE-bench-Live"


def test_live_rows_refused_with_a_reason(harness: Harness, offline_rows: list[dict[str, Any]]) -> None:
    row = live_rows(offline_rows)[0]
    assert is_live_row(row) and not is_live_row(offline_rows[0] | {"repo": V4_REPO, "eval_script": "x"})
    with pytest.raises(
        UnsupportedInstance, match="log_parser 'jest' of a SWE-bench-Live row is not supported"
    ):
        as_v5_row(row | {"log_parser": "jest"}, harness)
    with pytest.raises(UnsupportedInstance, match="test_cmds is not a list of commands"):
        as_v5_row(row | {"test_cmds": [1]}, harness)
    old = Harness("4.1.0")
    with pytest.raises(UnsupportedInstance, match="with swebench>=5,<6"):
        as_v5_row(row, old)


@pytest.mark.docker
def test_live_rows_grade_gold_and_empty(
    fixture_set: FixtureSet, docker_client: Any, harness: Harness, backend: SandboxBackend, tmp_path: Path
) -> None:
    rows = live_rows(list(fixture_set.rows.values()), fixture_set.images)
    dataset = write_jsonl(rows, tmp_path / "live.jsonl")
    bench = SWEbench(
        SWEbenchOptions(dataset=str(dataset)), images=DockerImages(docker_client), harness=harness
    )
    task = find_task(bench, rows[0]["instance_id"])
    assert (
        task.image
        == fixture_set.images[
            next(i for i in instances() if i.meta["instance_id"] == task.instance_id).repo_name
        ]
    )
    gold = bench.grade(task, task.patch, backend, "unused", 120)
    assert gold.resolved, gold.reason + "\n" + gold.log_tail
    assert all(gold.test_statuses[test] == TestStatus.PASSED for test in task.FAIL_TO_PASS)
    # The pytest guard runs on Live's command too: pytest exits 1 for its must-fail twins only.
    assert gold.tampered is None and gold.tests_exit_code == 1
    empty = bench.grade(task, "", backend, "unused", 120)
    assert not empty.resolved and empty.FAIL_TO_PASS.failure == task.FAIL_TO_PASS
