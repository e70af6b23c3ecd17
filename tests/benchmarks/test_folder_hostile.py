"""A hostile benchmark folder: links out of it, FIFOs, devices, huge or malformed files.

Each is one line naming the file at fault, through the loader, `clade bench check PATH` and
`POST /api/runs/plan` (422); nothing outside the folder is ever read, nothing hangs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from benchmarks.folder import FolderBenchmark, FolderLayoutError
from benchmarks.gitops import MAX_REPO_BYTES, MAX_REPO_FILE_BYTES
from benchmarks.userfiles import MAX_TEXT_BYTES
from cli.main import app
from tests.benchmarks.hostile import link_to as _link_to
from tests.benchmarks.hostile import replace as _replace
from tests.benchmarks.hostile import sparse
from tests.benchmarks.test_folder_benchmark import FIXTURE
from tests.servers import AppService, free_port
from tests.service.helpers import config


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return Path(shutil.copytree(FIXTURE, tmp_path / "bench"))


def _task(**fields: object) -> str:
    base = json.loads((FIXTURE / "tasks/calc-1/task.json").read_text())
    return json.dumps(base | fields)


def _edit_json(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _huge(path: Path) -> None:
    sparse(path, MAX_TEXT_BYTES + 1)


HOSTILE: dict[str, tuple[Callable[[Path], None], str, str]] = {
    # name: (how the folder is made hostile, the file the error names, what it says)
    "statement links to /etc/passwd": (
        lambda f: _replace(f / "tasks/calc-1/statement.md", _link_to("/etc/passwd")),
        "tasks/calc-1/statement.md",
        "is a symbolic link to /etc/passwd, outside the folder",
    ),
    "statement links to /dev/zero": (
        lambda f: _replace(f / "tasks/calc-1/statement.md", _link_to("/dev/zero")),
        "tasks/calc-1/statement.md",
        "outside the folder",
    ),
    "gold patch links to /etc/passwd": (
        lambda f: _replace(f / "tasks/calc-1/gold.patch", _link_to("/etc/passwd")),
        "tasks/calc-1/gold.patch",
        "outside the folder",
    ),
    "task.json is a FIFO": (
        lambda f: _replace(f / "tasks/calc-1/task.json", os.mkfifo),
        "tasks/calc-1/task.json",
        "is a FIFO, not a regular file",
    ),
    "suite.json is a FIFO": (
        lambda f: _replace(f / "suite.json", os.mkfifo),
        "suite.json",
        "is a FIFO, not a regular file",
    ),
    "task.json is a folder": (
        lambda f: _replace(f / "tasks/calc-1/task.json", Path.mkdir),
        "tasks/calc-1/task.json",
        "is a folder, not a regular file",
    ),
    "statement larger than the cap": (
        lambda f: _replace(f / "tasks/calc-1/statement.md", _huge),
        "tasks/calc-1/statement.md",
        f"is larger than {MAX_TEXT_BYTES} bytes",
    ),
    "task.json not UTF-8": (
        lambda f: (f / "tasks/calc-1/task.json").write_bytes(b'{"repo": "calc\xe9"}'),
        "tasks/calc-1/task.json",
        "is not UTF-8 text (byte 14)",
    ),
    "task.json nested too deep": (
        lambda f: (f / "tasks/calc-1/task.json").write_text("[" * 100_000),
        "tasks/calc-1/task.json",
        "bad JSON: nested too deep",
    ),
    "task.json gives a key twice": (
        lambda f: (f / "tasks/calc-1/task.json").write_text('{"repo": "calc", "repo": "greet"}'),
        "tasks/calc-1/task.json",
        "the key 'repo' is given twice",
    ),
    "FAIL_TO_PASS a JSON string nested too deep": (
        lambda f: (f / "tasks/calc-1/task.json").write_text(_task(FAIL_TO_PASS="[" * 100_000)),
        "tasks/calc-1/task.json",
        "FAIL_TO_PASS: a JSON-encoded list nested too deep",
    ),
    "suite id with a line break": (
        lambda f: (f / "suite.json").write_text(json.dumps({"tasks": ["calc-1\n\x1b[31mok"]})),
        "suite.json",
        "tasks: 'calc-1\\n\\x1b[31mok' holds a control character",
    ),
    "suite id of 5000 characters": (
        lambda f: (f / "suite.json").write_text(json.dumps({"tasks": ["a" * 5000]})),
        "suite.json",
        "is longer than 200 characters",
    ),
    "instance_id with an escape": (
        lambda f: (f / "tasks/calc-1/task.json").write_text(_task(instance_id="calc-1\x1b[2J")),
        "tasks/calc-1/task.json",
        "instance_id: 'calc-1\\x1b[2J' holds a control character",
    ),
    "repo_path relative": (
        lambda f: (f / "tasks/calc-1/task.json").write_text(_task(repo_path="../../etc")),
        "tasks/calc-1/task.json",
        "repo_path: '../../etc' is not an absolute path",
    ),
    "a test command that names no program": (
        lambda f: (f / "tasks/calc-1/task.json").write_text(_task(test_command=["", "-m", "pytest"])),
        "tasks/calc-1/task.json",
        "test_command: the first item, the program to run, is empty",
    ),
    "repository links to a host folder": (
        lambda f: _replace(f / ".repos/calc", _link_to("/etc/ssl")),
        ".repos/calc",
        "is a symbolic link to /etc/ssl, outside the folder",
    ),
    "evaluator links to a host folder": (
        lambda f: _replace(f / "tasks/calc-2/evaluator", _link_to("/etc")),
        "tasks/calc-2/evaluator",
        "outside the folder",
    ),
    "tasks/ links to a folder elsewhere": (
        lambda f: (f / "tasks").symlink_to(shutil.move(f / "tasks", f.parent / "elsewhere")),
        "tasks",
        "outside the folder",
    ),
    "a task folder links to a folder elsewhere": (
        lambda f: (f / "tasks/calc-2").symlink_to(shutil.move(f / "tasks/calc-2", f.parent / "elsewhere")),
        "tasks/calc-2",
        "outside the folder",
    ),
    "a subset named all": (
        lambda f: _edit_json(f / "suite.json", lambda d: d["subsets"].update(all=["calc-1"])),
        "suite.json",
        "subsets: 'all' is every task, always",
    ),
    "a subset name with a line break": (
        lambda f: _edit_json(f / "suite.json", lambda d: d["subsets"].update({"a\nb": ["calc-1"]})),
        "suite.json",
        "subsets: subset name 'a\\nb' holds a control character",
    ),
    "a subset of 5000 unknown tasks": (
        lambda f: _edit_json(
            f / "suite.json", lambda d: d["subsets"].update(odd=[f"x-{i}" for i in range(5000)])
        ),
        "suite.json",
        "subset 'odd' names unknown tasks: x-0, x-1, x-2, x-3, x-4, x-5, x-6, x-7, x-8, x-9 and 4990 more",
    ),
    "a sparse terabyte in the repository": (
        lambda f: sparse(f / ".repos/calc/big.bin", 2**40),
        ".repos/calc/big.bin",
        f"is 1,099,511,627,776 bytes; a file of a task's repository may hold at most {MAX_REPO_FILE_BYTES:,}",
    ),
    "a repository of more bytes than the cap in files under the file cap": (
        lambda f: [sparse(f / f".repos/calc/part-{i}.bin", MAX_REPO_FILE_BYTES) for i in range(5)],
        ".repos/calc",
        f"holds more than {MAX_REPO_BYTES:,} bytes",
    ),
    "a FIFO in the repository": (
        lambda f: os.mkfifo(f / ".repos/calc/pipe"),
        ".repos/calc/pipe",
        "cannot be copied into the repository: ",
    ),
}


@pytest.mark.parametrize("hostile", list(HOSTILE))
def test_a_hostile_folder_is_one_line_naming_the_file(folder: Path, hostile: str) -> None:
    breaks, culprit, says = HOSTILE[hostile]
    breaks(folder)
    with pytest.raises(FolderLayoutError) as raised:
        FolderBenchmark(path=folder)
    message = str(raised.value)
    assert raised.value.path == folder / culprit, message
    assert message.startswith(f"{folder / culprit}: ") and says in message, message
    assert "\n" not in message


def test_a_link_in_the_repository_is_copied_as_a_link_never_as_the_host_file(
    folder: Path, tmp_path: Path
) -> None:
    (folder / ".repos/calc/passwd").symlink_to("/etc/passwd")
    (folder / ".repos/calc/zero").symlink_to("/dev/zero")
    bench = FolderBenchmark(path=folder)
    repo = tmp_path / "repo"
    bench.prepare_repo(bench.tasks()[0], repo)
    assert os.readlink(repo / "passwd") == "/etc/passwd"
    assert os.readlink(repo / "zero") == "/dev/zero"
    listed = subprocess.run(
        ["git", "ls-files", "--stage", "passwd"], cwd=repo, capture_output=True, text=True, check=True
    )
    assert listed.stdout.startswith("120000 ")  # git holds the link, not the file's content


def test_links_that_stay_inside_the_folder_are_followed(folder: Path) -> None:
    statement = folder / "tasks/calc-1/statement.md"
    _replace(statement, _link_to("../calc-2/statement.md"))
    bench = FolderBenchmark(path=folder)
    assert bench.tasks()[0].problem_statement == (folder / "tasks/calc-2/statement.md").read_text()


def test_clade_bench_check_says_it_in_one_line_without_a_traceback(folder: Path) -> None:
    (folder / "tasks/calc-1/task.json").write_text("[" * 100_000)
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens: the check needs no service
    result = CliRunner().invoke(app, ["--url", url, "bench", "check", str(folder)], env={"COLUMNS": "200"})
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.exception
    assert result.stderr.strip() == (
        f"error: {folder} cannot load: {folder}/tasks/calc-1/task.json: bad JSON: nested too deep"
    )


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_plan_api_answers_422_naming_the_file(service: AppService, seed_id: str, folder: Path) -> None:
    (folder / "tasks/calc-1/task.json").write_text("[" * 100_000)
    (folder / "tasks/greet-1/statement.md").unlink()
    (folder / "tasks/greet-1/statement.md").symlink_to("/etc/passwd")
    body = config(seed_id) | {"benchmark": {"name": "folder", "options": {"path": str(folder)}}}
    body["stages"] = [{"subset": "all"}]
    with service.admin as admin:
        deep = admin.post("/api/runs/plan", json=body)
        (folder / "tasks/calc-1/task.json").write_text(_task())
        passwd = admin.post("/api/runs/plan", json=body | {"name": "again"})
    assert deep.status_code == 422, deep.text
    [problem] = deep.json()["detail"]
    assert problem["loc"] == ["body", "benchmark", "options"]
    assert problem["msg"] == f"folder cannot load: {folder}/tasks/calc-1/task.json: bad JSON: nested too deep"
    assert passwd.status_code == 422, passwd.text
    assert "greet-1/statement.md: is a symbolic link to /etc/passwd" in passwd.text
    assert "root:" not in passwd.text


def _check(*args: str) -> Result:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens: these fail before any request
    return CliRunner().invoke(app, ["--url", url, "bench", "check", *args], env={"COLUMNS": "200"})


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("/no/such/bench", "error: no folder '/no/such/bench' here: NAME is a benchmark (clade-mini, "),
        ("", "error: no folder '' here"),
        ("/" + "a" * 5000, "error: no folder '/aaaa"),
        ("~no-such-user-clade/bench", "error: no folder '~no-such-user-clade/bench' here"),
    ],
)
def test_clade_bench_check_of_a_path_that_is_no_folder(name: str, says: str) -> None:
    result = _check(name)
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit), result.exception
    assert result.stderr.startswith(says) and "Traceback" not in result.stderr, result.stderr


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_plan_api_names_the_path_option_it_cannot_use(service: AppService, seed_id: str) -> None:
    answers = []
    with service.admin as admin:
        for path in ("~no-such-user-clade/bench", "/" + "a" * 5000):
            body = config(seed_id) | {"benchmark": {"name": "folder", "options": {"path": path}}}
            answers.append(admin.post("/api/runs/plan", json=body))
    for answer in answers:
        assert answer.status_code == 422, answer.text
        [problem] = answer.json()["detail"]
        assert problem["loc"] == ["body", "benchmark", "options", "path"]
        assert "is not a folder" in problem["msg"]
