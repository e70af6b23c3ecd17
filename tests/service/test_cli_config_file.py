"""`clade run start FILE` (and `--options FILE`, `--option KEY=VALUE`) on files and values a
person can get wrong: each is one line naming the file and the field, a nonzero exit, no
traceback, and nothing sent to the service."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from typer.testing import CliRunner, Result

from cli import config_file
from cli.context import CliContext
from cli.main import app
from tests.service.helpers import cli_refusal as refused

SEED = "a" * 40


class NoService:
    """A client that fails the test if anything is sent: bad files are refused before."""

    def post(self, path: str, json: Any = None, **kwargs: Any) -> Any:
        raise AssertionError(f"sent {path} {json!r}")


def clade(*args: str) -> Result:
    with mock.patch.object(CliContext, "client", return_value=NoService()):
        return CliRunner().invoke(app, ["--token", "t", *args], env={"COLUMNS": "80"})


def start(path: Path, *, dry_run: bool) -> str:
    return refused(clade("run", "start", str(path), *(["--dry-run"] if dry_run else [])))


NOT_JSON = [
    ("name: 2024-01-01\n", "field name: a date (2024-01-01) is not a JSON value; quote it"),
    ("name: 2024-01-01 10:00:00\n", "field name: a timestamp (2024-01-01T10:00:00) is not a JSON value"),
    ("name: !!binary aGk=\n", "field name: binary data (!!binary) is not a JSON value"),
    ("name: !!set {a, b}\n", "field name: a set (!!set) is not a JSON value; give a list"),
    ("selection:\n  params:\n    alpha: .nan\n", "field selection.params.alpha: .nan (not a number)"),
    ("evaluation:\n  checkpoints: [.inf]\n", "field evaluation.checkpoints.0: .inf (infinity"),
    ("budget: {max_usd: -.inf}\n", "field budget.max_usd: -.inf (infinity"),
    ("budget: {max_usd: 1e400}\n", "field budget.max_usd: .inf (infinity, or a number too large"),
    ('name: "\\ud800"\n', "field name: must be valid Unicode text (it holds a lone surrogate)"),
    ('name: "a\\0b"\n', "field name: must not contain the NUL character"),
    ('{"name": "x", "\\ud800": 1}\n', "field \ufffd: the key must be valid Unicode text"),
    ("name: a\nname: b\n", "line 3, column 1: the key 'name' is given twice (first on line 2)"),
    ('{"stages": [{"tasks": 1, "tasks": 2}]}', "line 1, column 26: the key 'tasks' is given twice"),
    ("yes: 1\n", "line 2, column 1: the key 'yes' is read as a boolean, not as text; quote it"),
    ("budget:\n  1: 2\n", "line 3, column 3: the key '1' is read as a number, not as text; quote it"),
]


@pytest.mark.parametrize("dry_run", [False, True])
@pytest.mark.parametrize(("text", "message"), NOT_JSON)
def test_what_json_cannot_carry_is_refused_at_its_field(
    tmp_path: Path, text: str, message: str, dry_run: bool
) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(f"seed_agent: {SEED}\n{text}" if not text.startswith("{") else text)
    assert start(path, dry_run=dry_run).startswith(f"error: {path}: {message}")


def test_a_quoted_date_and_a_merge_key_are_fine(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(f"seed_agent: {SEED}\nname: '2024-01-01'\nbudget:\n  <<: {{max_children: 3}}\n")
    sent: list[Any] = []

    class Service:
        def post(self, path: str, json: Any = None, **kwargs: Any) -> Any:
            sent.append(json)
            return {"id": "r1", "name": json["name"]}

    with mock.patch.object(CliContext, "client", return_value=Service()):
        result = CliRunner().invoke(app, ["--token", "t", "run", "start", str(path)])
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert sent == [{"seed_agent": SEED, "name": "2024-01-01", "budget": {"max_children": 3}}]


@pytest.mark.parametrize("dry_run", [False, True])
def test_files_that_are_not_text_files_are_named(tmp_path: Path, dry_run: bool) -> None:
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes(f"seed_agent: {SEED}\nname: caf\xe9\n".encode("latin-1"))
    assert start(latin1, dry_run=dry_run) == (
        f"error: {latin1}: not UTF-8 text (line 2: byte 0xe9 at offset 62); save it as UTF-8"
    )
    folder = tmp_path / "configs.yaml"
    folder.mkdir()
    assert start(folder, dry_run=dry_run) == f"error: {folder}: is a directory, not a file"
    missing = tmp_path / "missing.yaml"
    assert start(missing, dry_run=dry_run) == f"error: {missing}: no such file"
    bracketed = tmp_path / "[/x].yaml"  # a name rich would read as a closing tag
    assert start(bracketed, dry_run=dry_run) == f"error: {bracketed}: no such file"


def test_a_fifo_or_device_is_refused_unread(tmp_path: Path) -> None:
    fifo = tmp_path / "run.yaml"
    os.mkfifo(fifo)
    outcome: list[str] = []
    # In a thread: if the CLI opened the FIFO to read it, it would wait for a writer forever.
    thread = threading.Thread(target=lambda: outcome.append(start(fifo, dry_run=True)), daemon=True)
    thread.start()
    thread.join(timeout=30)
    assert outcome == [f"error: {fifo}: not a regular file (a FIFO, device or socket is not read)"]
    assert start(Path("/dev/zero"), dry_run=False) == (
        "error: /dev/zero: not a regular file (a FIFO, device or socket is not read)"
    )


def test_a_huge_file_is_refused_after_reading_its_limit(tmp_path: Path) -> None:
    huge = tmp_path / "run.yaml"
    with huge.open("wb") as file:
        file.truncate(8 << 30)  # sparse: 8 GiB that take no disk, and would not fit in memory read whole
    assert start(huge, dry_run=True) == f"error: {huge}: the file is larger than 4,000,000 bytes"
    small = tmp_path / "small.yaml"
    small.write_text("x" * 65)
    with pytest.raises(config_file.ConfigFileError, match="larger than 64 bytes"):
        config_file.read_text_file(small, max_bytes=64)
    assert config_file.read_text_file(small, max_bytes=65) == "x" * 65


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["dataset=2024-01-01"],
            "--option dataset: a date (2024-01-01) is not a JSON value; quote it to give it as text",
        ),
        (["instance_ids=[a, .nan]"], "--option instance_ids.1: .nan (not a number) is not a JSON value"),
        (
            ["dataset={a: 1, a: 2}"],
            "--option dataset: cannot read '{a: 1, a: 2}' as a value (line 1, column 8: the key 'a' "
            "is given twice (first on line 1))",
        ),
    ],
)
def test_option_values_json_cannot_carry_are_usage_errors(args: list[str], message: str) -> None:
    options = [word for arg in args for word in ("--option", arg)]
    assert refused(clade("bench", "list", "swebench", *options), code=2) == f"error: {message}"


def test_an_options_file_is_read_as_a_run_configuration_is(tmp_path: Path) -> None:
    path = tmp_path / "options.yaml"
    path.write_text("dataset: lite\ndataset: verified\n")
    assert refused(clade("bench", "list", "swebench", "--options", str(path)), code=2) == (
        f"error: --options {path}: line 2, column 1: the key 'dataset' is given twice (first on line 1)"
    )
    path.write_bytes(b"dataset: \xff\n")
    assert refused(clade("bench", "list", "swebench", "--options", str(path)), code=2) == (
        f"error: --options {path}: not UTF-8 text (line 1: byte 0xff at offset 9); save it as UTF-8"
    )
    assert refused(clade("bench", "list", "swebench", "--options", str(tmp_path)), code=2) == (
        f"error: --options {tmp_path}: is a directory, not a file"
    )


def test_restore_names_a_directory_or_fifo_given_as_the_backup(tmp_path: Path) -> None:
    fifo = tmp_path / "backup.tar"
    os.mkfifo(fifo)
    target = ["--data-dir", str(tmp_path / "data"), "--database-url", f"sqlite:///{tmp_path / 'c.db'}"]
    folder = refused(clade("restore", str(tmp_path), *target))
    assert folder == f"error: {tmp_path}: is a directory, not a file"
    assert refused(clade("restore", str(fifo), *target)) == (
        f"error: {fifo}: not a regular file (a FIFO, device or socket is not read)"
    )
