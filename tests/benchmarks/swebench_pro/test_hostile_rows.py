"""Hostile SWE-bench Pro rows and scripts folders: an instance id that climbs out of the
scripts folder, scripts that link to host files, FIFOs, bytes that are not UTF-8. Each is one
line naming the row and the file, from the loader and `POST /api/runs/plan` (422)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchmarks.swebench_pro import UnsupportedRow
from benchmarks.swebench_pro.tasks import MAX_SCRIPT_BYTES, to_task
from tests.benchmarks.hostile import plan_refusal
from tests.benchmarks.hostile import replace as _replace
from tests.servers import AppService

IID = "instance_org__repo-1"


def _row(**fields: Any) -> dict[str, Any]:
    return {
        "instance_id": IID,
        "repo": "org/repo",
        "base_commit": "a" * 40,
        "problem_statement": "Fix it.",
        "patch": "diff",
        "test_patch": "diff",
        "fail_to_pass": '["tests/test_a.py::test_a"]',
        "pass_to_pass": "[]",
        "selected_test_files_to_run": '["tests/test_a.py"]',
    } | fields


@pytest.fixture
def scripts(tmp_path: Path) -> Path:
    """A scripts folder holding the row's run_script.sh and parser.py."""
    folder = tmp_path / "run_scripts" / IID
    folder.mkdir(parents=True)
    (folder / "run_script.sh").write_text("echo run\n")
    (folder / "parser.py").write_text("print('{}')\n")
    return folder.parent


def test_the_fixture_row_loads(scripts: Path) -> None:
    task = to_task(_row(), scripts, image_repository="repo")
    assert (task.run_script, task.parser) == ("echo run\n", "print('{}')\n")


def test_a_test_list_nested_too_deep_is_one_line(scripts: Path) -> None:
    with pytest.raises(UnsupportedRow) as raised:
        to_task(_row(fail_to_pass="[" * 100_000), scripts, image_repository="repo")
    assert str(raised.value) == f"{IID}: fail_to_pass is not a list: nested too deep"


@pytest.mark.parametrize(
    ("instance_id", "says"),
    [
        ("../../../etc", "instance_id '../../../etc' is not a folder name under the scripts folder"),
        ("/etc", "instance_id '/etc' is not a folder name under the scripts folder"),
        ("..", "instance_id '..' is not a folder name"),
        ("a\n\x1b[2J", "instance_id 'a\\n\\x1b[2J' holds a control character"),
    ],
)
def test_an_instance_id_never_names_a_folder_outside_the_scripts(
    scripts: Path, tmp_path: Path, instance_id: str, says: str
) -> None:
    # What the row would reach, were its id used as a path: it must stay unread.
    (tmp_path / "run_script.sh").write_text("secret\n")
    with pytest.raises(UnsupportedRow) as raised:
        to_task(_row(instance_id=instance_id), scripts / "x" / "y", image_repository="repo")
    assert str(raised.value).startswith(says) and "\n" not in str(raised.value), str(raised.value)


HOSTILE: dict[str, tuple[Callable[[Path], object], str]] = {
    # name: (how the row's run_script.sh is made hostile, what the error says after its path)
    "a link to /etc/passwd": (
        lambda path: _replace(path, lambda p: p.symlink_to("/etc/passwd")),
        "is a symbolic link to /etc/passwd, outside the folder",
    ),
    "a FIFO": (lambda path: _replace(path, os.mkfifo), "is a FIFO, not a regular file: refused"),
    "not UTF-8": (lambda path: path.write_bytes(b"echo \xe9\n"), "is not UTF-8 text (byte 5)"),
    "too large": (
        lambda path: path.write_bytes(b"#" * (MAX_SCRIPT_BYTES + 1)),
        f"is larger than {MAX_SCRIPT_BYTES} bytes: refused",
    ),
}


@pytest.mark.parametrize("hostile", list(HOSTILE))
def test_a_hostile_script_is_one_line_naming_it(scripts: Path, hostile: str) -> None:
    breaks, says = HOSTILE[hostile]
    script = scripts / IID / "run_script.sh"
    breaks(script)
    with pytest.raises(UnsupportedRow) as raised:
        to_task(_row(), scripts, image_repository="repo")
    message = str(raised.value)
    assert message.startswith(f"{IID}: {script}: {says}") and "root:" not in message, message


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_plan_api_answers_422_naming_the_row(
    service: AppService, seed_id: str, scripts: Path, tmp_path: Path
) -> None:
    dataset = tmp_path / "rows.jsonl"
    dataset.write_text(json.dumps(_row(instance_id="../../etc")) + "\n")
    options = {"dataset": str(dataset), "scripts": str(scripts)}
    message = plan_refusal(service, seed_id, "swebench-pro", options)
    assert message == (
        "swebench-pro cannot load: instance_id '../../etc' is not a folder name under the scripts folder"
    )
