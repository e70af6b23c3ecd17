"""A hostile polyglot layout: links out of an exercise, FIFOs, odd names. Each is one line
naming the exercise and the file, through the loader and `POST /api/runs/plan` (422); no host
file reaches the agent's repository, the gold patch or the statement; nothing hangs."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks import BrokenTask
from benchmarks.polyglot import Polyglot
from tests.benchmarks.hostile import link_to as _link_to
from tests.benchmarks.hostile import plan_refusal, sparse
from tests.benchmarks.hostile import replace as _replace
from tests.servers import AppService

from .layouts import write_exercise


def _exercise(root: Path) -> Path:
    return write_exercise(
        root,
        "python",
        "echo",
        {
            "echo.py": "def echo(x):\n    pass\n",
            "helper.py": "X = 1\n",
            "echo_test.py": "",
            ".meta/example.py": "def echo(x):\n    return x\n",
        },
        solution=["echo.py"],
        test=["echo_test.py"],
        example=[".meta/example.py"],
    )


def _move_out(folder: Path) -> None:
    elsewhere = folder.parents[4] / "elsewhere"
    folder.symlink_to(shutil.move(folder, elsewhere))


HOSTILE: dict[str, tuple[Callable[[Path], None], str]] = {
    # name: (how the exercise is made hostile, what the one-line error says)
    "the stub links to /etc/passwd": (
        lambda e: _replace(e / "echo.py", _link_to("/etc/passwd")),
        "python/echo: echo.py: is a symbolic link to /etc/passwd, outside the folder",
    ),
    "the example links to /etc/passwd": (
        lambda e: _replace(e / ".meta/example.py", _link_to("/etc/passwd")),
        "python/echo: .meta/example.py: is a symbolic link to /etc/passwd",
    ),
    "the instructions link to /etc/passwd": (
        lambda e: _replace(e / ".docs/instructions.md", _link_to("/etc/passwd")),
        "python/echo: .docs/instructions.md: is a symbolic link to /etc/passwd",
    ),
    "config.json is a FIFO": (
        lambda e: _replace(e / ".meta/config.json", os.mkfifo),
        ".meta/config.json: is a FIFO, not a regular file: refused",
    ),
    "config.json links to /dev/zero": (
        lambda e: _replace(e / ".meta/config.json", _link_to("/dev/zero")),
        ".meta/config.json: is a symbolic link to /dev/zero",
    ),
    "config.json is not UTF-8": (
        lambda e: (e / ".meta/config.json").write_bytes(b'{"files": "\xe9"}'),
        ".meta/config.json: is not UTF-8 text (byte 11)",
    ),
    "config.json is a list": (
        lambda e: (e / ".meta/config.json").write_text("[]"),
        "python/echo: .meta/config.json: Input should be an object",
    ),
    "the introduction is a FIFO": (
        lambda e: os.mkfifo(e / ".docs/introduction.md"),
        ".docs/introduction.md: is a FIFO, not a regular file: refused",
    ),
    "a FIFO among the exercise's files": (
        lambda e: os.mkfifo(e / "pipe"),
        "python/echo: " + "{exercise}/pipe cannot be copied: ",
    ),
    "a sparse terabyte among the exercise's files": (
        lambda e: sparse(e / "big.bin", 2**40),
        "python/echo: {exercise}/big.bin: is 1,099,511,627,776 bytes; a file of a task's repository may hold",
    ),
    "the exercise folder links out of the root": (_move_out, "{exercise}: is a symbolic link to "),
    "a line break in the exercise's name": (
        lambda e: e.rename(e.parent / "ec\nho"),
        "the folder's name 'ec\\nho' holds a control character",
    ),
}


@pytest.mark.parametrize("hostile", list(HOSTILE))
def test_a_hostile_exercise_is_one_line_naming_the_file(tmp_path: Path, hostile: str) -> None:
    breaks, says = HOSTILE[hostile]
    exercise = _exercise(tmp_path)
    breaks(exercise)
    with pytest.raises(BrokenTask) as raised:
        Polyglot(root=tmp_path)
    message = str(raised.value)
    assert says.format(exercise=exercise) in message, message
    assert "\n" not in message and "root:" not in message


def test_a_link_among_the_exercise_files_stays_a_link(tmp_path: Path) -> None:
    exercise = _exercise(tmp_path)
    _replace(exercise / "helper.py", _link_to("/etc/passwd"))
    benchmark = Polyglot(root=tmp_path)
    [task] = benchmark.tasks()
    repo = tmp_path / "repo"
    benchmark.prepare_repo(task, repo)
    assert os.readlink(repo / "helper.py") == "/etc/passwd"  # the link, not the host's file
    assert "root:" not in task.patch


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_plan_api_answers_422_naming_the_file(service: AppService, seed_id: str, tmp_path: Path) -> None:
    root = tmp_path / "layout"
    exercise = _exercise(root)
    _replace(exercise / ".meta/config.json", os.mkfifo)
    message = plan_refusal(service, seed_id, "polyglot", {"root": str(root)})
    assert message.endswith(f"{exercise}/.meta/config.json: is a FIFO, not a regular file: refused")
