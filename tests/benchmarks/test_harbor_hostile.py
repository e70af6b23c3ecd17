"""A hostile Harbor folder: links out of it, FIFOs, devices, TOML that is deep or not a number.

Each is one line naming the file, through the loader and `POST /api/runs/plan` (422); nothing
outside the folder is read, copied into a sandbox or mounted, and nothing hangs.
"""

from __future__ import annotations

import os
import shutil
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks.harbor import HarborBenchmark, HarborLayoutError, HarborOptions
from benchmarks.harbor.environment import context_digest
from tests.benchmarks.hostile import link_to as _link_to
from tests.benchmarks.hostile import plan_refusal
from tests.benchmarks.hostile import replace as _replace
from tests.benchmarks.test_harbor_layout import FIXTURE
from tests.servers import AppService

TOML = (FIXTURE / "write-greeting" / "task.toml").read_text()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A folder holding one copy of the write-greeting task, at task/."""
    shutil.copytree(FIXTURE / "write-greeting", tmp_path / "bench" / "task")
    return tmp_path / "bench"


def _toml(old: str, new: str) -> Callable[[Path], None]:
    assert old in TOML
    return lambda task: (task / "task.toml").write_text(TOML.replace(old, new))


HOSTILE: dict[str, tuple[Callable[[Path], None], str, str]] = {
    # name: (how the task folder is made hostile, the file the error names, what it says)
    "instruction links to /etc/passwd": (
        lambda t: _replace(t / "instruction.md", _link_to("/etc/passwd")),
        "instruction.md",
        "is a symbolic link to /etc/passwd, outside the folder",
    ),
    "instruction links to /dev/zero": (
        lambda t: _replace(t / "instruction.md", _link_to("/dev/zero")),
        "instruction.md",
        "outside the folder",
    ),
    "instruction is a FIFO": (
        lambda t: _replace(t / "instruction.md", os.mkfifo),
        "instruction.md",
        "is a FIFO, not a regular file",
    ),
    "task.toml is a FIFO": (
        lambda t: _replace(t / "task.toml", os.mkfifo),
        "task.toml",
        "is a FIFO, not a regular file",
    ),
    "task.toml links to /etc/passwd": (
        lambda t: _replace(t / "task.toml", _link_to("/etc/passwd")),
        "task.toml",
        "outside the folder",
    ),
    "task.toml nested too deep": (
        lambda t: (t / "task.toml").write_text("a = " + "[" * 100_000),
        "task.toml",
        "not valid TOML: nested too deep",
    ),
    "an infinite timeout": (
        _toml("timeout_sec = 300.0", "timeout_sec = inf"),
        "task.toml",
        "[agent].timeout_sec must be a positive number of seconds, not inf",
    ),
    "nan cpus": (
        _toml("cpus = 1", "cpus = nan"),
        "task.toml",
        "[environment].cpus must be a positive number",
    ),
    "infinite memory_mb": (
        _toml('memory = "1G"', "memory_mb = inf"),
        "task.toml",
        "[environment].memory_mb must be a positive number, not inf",
    ),
    "an env name with a line break": (
        lambda t: (t / "task.toml").write_text(TOML + '\n[verifier.env]\n"A\\nB" = "x"\n'),
        "task.toml",
        "[verifier].env: 'A\\nB' is not a variable name",
    ),
    "Dockerfile links to a host file": (
        lambda t: _replace(t / "environment" / "Dockerfile", _link_to("/etc/passwd")),
        "environment/Dockerfile",
        "outside the folder",
    ),
    "environment/ links to a host folder": (
        lambda t: _replace(t / "environment", _link_to("/etc/ssl")),
        "environment",
        "is a symbolic link to /etc/ssl, outside the folder",
    ),
    "tests/ links to a host folder": (
        lambda t: _replace(t / "tests", _link_to("/etc/ssl")),
        "tests",
        "outside the folder",
    ),
    "solution/ links to a host folder": (
        lambda t: _replace(t / "solution", _link_to("/etc/ssl")),
        "solution",
        "outside the folder",
    ),
}


@pytest.mark.parametrize("hostile", list(HOSTILE))
def test_a_hostile_task_is_one_line_naming_the_file(root: Path, hostile: str) -> None:
    breaks, culprit, says = HOSTILE[hostile]
    breaks(root / "task")
    with pytest.raises(HarborLayoutError) as raised:
        HarborBenchmark(HarborOptions(path=root))
    message = str(raised.value)
    assert raised.value.path == root / "task" / culprit, message
    assert message.startswith(f"{root / 'task' / culprit}: ") and says in message, message
    assert "\n" not in message and "root:" not in message


def test_unknown_tasks_are_one_readable_line(root: Path) -> None:
    with pytest.raises(HarborLayoutError) as raised:
        HarborBenchmark(HarborOptions(path=root, tasks=["a\nb\x1b[2J", *(f"x{i}" for i in range(3000))]))
    assert str(raised.value) == (
        f"{root}: has no task a\\nb\\x1b[2J, x0, x1, x2, x3, x4, x5, x6, x7, x8 and 2991 more (option tasks)"
    )


def test_a_link_between_tasks_of_the_folder_is_followed(root: Path) -> None:
    other = root / "other"
    shutil.copytree(root / "task", other)
    (other / "instruction.md").write_text("Do the other thing.\n")
    _replace(root / "task" / "instruction.md", _link_to("../other/instruction.md"))
    benchmark = HarborBenchmark(HarborOptions(path=root, tasks=["task"]))
    assert benchmark.tasks()[0].problem_statement == "Do the other thing."


def test_the_context_digest_reads_a_large_file_in_pieces(tmp_path: Path) -> None:
    context = tmp_path / "environment"
    context.mkdir()
    with (context / "big").open("wb") as handle:  # sparse: 64 MB of zeros, nothing on disk
        handle.truncate(64 << 20)
    tracemalloc.start()
    try:
        before = context_digest(context, "FROM x\n")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20  # never the whole file in memory at once
    (context / "big").write_bytes(b"\0" * 10)
    assert context_digest(context, "FROM x\n") != before


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_plan_api_answers_422_naming_the_file(service: AppService, seed_id: str, root: Path) -> None:
    _replace(root / "task" / "instruction.md", os.mkfifo)
    message = plan_refusal(service, seed_id, "harbor", {"path": str(root)})
    assert message == (
        f"harbor cannot load: {root}/task/instruction.md: is a FIFO, not a regular file: refused"
    )
