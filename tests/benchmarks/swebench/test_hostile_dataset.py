"""A hostile SWE-bench dataset file: a FIFO, a device, a folder, bytes that are not UTF-8,
JSON nested too deep, no rows, ids with control characters. Each is one line naming the
file, from the loader and from `POST /api/runs/plan` (422); nothing hangs."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchmarks import get_benchmark
from benchmarks.swebench import DatasetError, load_rows
from benchmarks.swebench.tasks import UnsupportedInstance
from tests.benchmarks.hostile import plan_refusal
from tests.servers import AppService

HOSTILE: dict[str, tuple[str, Callable[[Path], object], str]] = {
    # name: (file name, how it is made, what the one-line error says)
    "a FIFO": ("rows.jsonl", os.mkfifo, "rows.jsonl: is a FIFO, not a regular file: refused"),
    "a parquet FIFO": ("rows.parquet", os.mkfifo, "rows.parquet: is a FIFO, not a regular file"),
    "a link to /dev/zero": (
        "rows.jsonl",
        lambda path: path.symlink_to("/dev/zero"),
        "rows.jsonl: is a character device, not a regular file: refused",
    ),
    "a folder": ("rows.json", Path.mkdir, "rows.json: is a folder, not a regular file: refused"),
    "not UTF-8": (
        "rows.jsonl",
        lambda path: path.write_bytes(b'{"instance_id": "\xe9"}\n'),
        "rows.jsonl: is not UTF-8 text (byte 17)",
    ),
    "JSON nested too deep": (
        "rows.json",
        lambda path: path.write_text("[" * 100_000),
        "rows.json: not valid JSON: nested too deep",
    ),
    "a JSONL line nested too deep": (
        "rows.jsonl",
        lambda path: path.write_text("{}\n" + "[" * 100_000 + "\n"),
        "rows.jsonl:2: not valid JSON: nested too deep",
    ),
    "no rows": ("rows.jsonl", lambda path: path.write_text("\n"), "rows.jsonl: holds no instances"),
    "an id with a line break": (
        "rows.jsonl",
        lambda path: path.write_text('{"instance_id": "a\\n\\u001b[2J"}\n'),
        "rows.jsonl: instance 0: instance_id 'a\\n\\x1b[2J' holds a control character",
    ),
}


@pytest.mark.parametrize("hostile", list(HOSTILE))
def test_a_hostile_dataset_file_is_one_line_naming_it(tmp_path: Path, hostile: str) -> None:
    name, make, says = HOSTILE[hostile]
    make(tmp_path / name)
    with pytest.raises(DatasetError) as raised:
        load_rows(str(tmp_path / name))
    message = str(raised.value)
    assert str(tmp_path / name) in message and says in message, message
    assert "\n" not in message


def test_a_test_list_nested_too_deep_is_one_line(offline_rows: list[dict[str, Any]], tmp_path: Path) -> None:
    row = offline_rows[0] | {"FAIL_TO_PASS": "[" * 100_000}
    dataset = tmp_path / "rows.jsonl"
    dataset.write_text(json.dumps(row) + "\n")
    with pytest.raises(UnsupportedInstance) as raised:
        get_benchmark("swebench", dataset=str(dataset))
    assert str(raised.value) == f"{row['instance_id']}: FAIL_TO_PASS is not a JSON list: nested too deep"


@pytest.mark.parametrize(
    ("instance_id", "says"),
    [(None, "instance 1 has no instance_id"), (7, "instance 1's instance_id must be text, got int")],
)
def test_an_instance_id_missing_or_not_text_is_named(
    offline_rows: list[dict[str, Any]], tmp_path: Path, instance_id: object, says: str
) -> None:
    dataset = tmp_path / "rows.jsonl"
    rows = [offline_rows[0], offline_rows[1] | {"instance_id": instance_id}]
    dataset.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(DatasetError) as raised:
        get_benchmark("swebench", dataset=str(dataset))
    assert str(raised.value) == f"{dataset}: {says}"


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_plan_api_answers_422_naming_the_file(service: AppService, seed_id: str, tmp_path: Path) -> None:
    dataset = tmp_path / "rows.jsonl"
    dataset.write_bytes(b'{"instance_id": "\xe9"}\n')
    message = plan_refusal(service, seed_id, "swebench", {"dataset": str(dataset)})
    assert message == f"swebench cannot load: dataset file {dataset}: is not UTF-8 text (byte 17)"
