"""`clade bench prepare swebench --option dataset=...`: every image a run needs, ahead of time.

With the fixture set's instance images built locally, every one is reported present (no
pull); with a dataset whose images were never built, and no registry reachable, each is
reported missing with an error naming it, and the command fails.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchmarks.swebench import Harness
from cli.main import app
from tests.benchmarks.swebench.conftest import FixtureSet

pytestmark = pytest.mark.docker


def prepare(dataset: Path) -> tuple[int, list[dict[str, object]], str]:
    result = CliRunner().invoke(
        app, ["--json", "bench", "prepare", "swebench", "--option", f"dataset={dataset}"]
    )
    rows = json.loads(result.stdout) if result.stdout.strip() else []
    return result.exit_code, rows, result.output


def test_prepare_finds_every_locally_built_instance_image(fixture_set: FixtureSet, harness: Harness) -> None:
    code, rows, output = prepare(fixture_set.datasets[harness.instance_format])
    assert code == 0, output
    kinds = [row["kind"] for row in rows]
    assert kinds[:2] == ["base image", "agent runtime"]
    task_images = {row["name"]: row for row in rows if row["kind"] == "task image"}
    assert task_images and all(row["status"] == "present" for row in task_images.values())
    assert sum(int(str(row["tasks"])) for row in task_images.values()) == len(fixture_set.rows)


def test_prepare_names_every_image_it_cannot_get(
    offline_dataset: Path, offline_rows: list[dict[str, object]]
) -> None:
    code, rows, output = prepare(offline_dataset)
    assert code == 1, output
    failed = [row for row in rows if row["status"] == "failed"]
    assert failed and all(row["kind"] == "task image" for row in failed)
    for row in failed:
        assert str(row["name"]) in str(row["detail"]) and "could not be pulled" in str(row["detail"])
