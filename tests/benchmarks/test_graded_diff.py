"""The graded diff: which of an agent's changes are test infrastructure, and what an honest fix keeps.

Each case is a real `git diff` of a small repository, applied and filtered as the graders do.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.gitops import apply_patch, git_ok, make_repo
from benchmarks.graded_diff import drop_test_infrastructure
from tests.benchmarks.helpers import Edit, write

PYPROJECT = '[project]\nname = "demo"\nversion = "1.0"\n\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'
SETUP_CFG = "[metadata]\nname = demo\n\n[tool:pytest]\ntestpaths = tests\n"
BASE = {
    "pyproject.toml": PYPROJECT,
    "setup.cfg": SETUP_CFG,
    "demo/__init__.py": "",
    "demo/core.py": "def f():\n    return 1\n",
    "queue.py": "# an exercise whose solution is named like a standard module\n",
    "tests/test_core.py": "from demo.core import f\n\n\ndef test_f():\n    assert f() == 1\n",
}


def replace(path: str, old: str, new: str) -> Edit:
    def edit(repo: Path) -> None:
        text = (repo / path).read_text()
        assert old in text
        (repo / path).write_text(text.replace(old, new))

    return edit


def graded(tmp_path: Path, *edits: Edit, keep: tuple[str, ...] = ()) -> tuple[dict[str, str], Path]:
    """What grading drops of the diff `edits` make, and the repository after it."""
    source = tmp_path / "source"
    for path, text in BASE.items():
        (source / path).parent.mkdir(parents=True, exist_ok=True)
        (source / path).write_text(text)
    agent, repo = tmp_path / "agent", tmp_path / "repo"
    make_repo(source, agent, "base")
    make_repo(source, repo, "base")
    for edit in edits:
        edit(agent)
    git_ok(agent, "add", "--all")
    diff = git_ok(agent, "diff", "--cached", "--binary")
    assert apply_patch(repo, diff).applied
    return drop_test_infrastructure(repo, diff, keep=keep), repo


@pytest.mark.parametrize(
    ("edit", "path", "rule"),
    [
        (write("conftest.py", "x = 1\n"), "conftest.py", "conftest.py"),
        (write("tests/unit/conftest.py", "x = 1\n"), "tests/unit/conftest.py", "conftest.py"),
        (write("pytest.ini", "[pytest]\n"), "pytest.ini", "pytest's configuration"),
        (write("tox.ini", "[pytest]\naddopts = -p x\n"), "tox.ini", "pytest's configuration"),
        (write("sitecustomize.py", "x = 1\n"), "sitecustomize.py", "start-up"),
        (write("lib/usercustomize.py", "x = 1\n"), "lib/usercustomize.py", "start-up"),
        (write("demo.pth", "import os\n"), "demo.pth", ".pth"),
        (write("x.egg-info/entry_points.txt", "[pytest11]\nx = x\n"), "x.egg-info/entry_points.txt", "entry"),
        (write("x-1.0.dist-info/METADATA", "Name: x\n"), "x-1.0.dist-info/METADATA", "entry"),
        (
            write("demo/__pycache__/core.cpython-311.pyc", "bytes"),
            "demo/__pycache__/core.cpython-311.pyc",
            "compiled",
        ),
        (write("pytest.py", "x = 1\n"), "pytest.py", "'pytest'"),
        (write("_pytest/__init__.py", ""), "_pytest/__init__.py", "'_pytest'"),
        (write("pluggy/__init__.py", ""), "pluggy/__init__.py", "'pluggy'"),
        (write("unittest.py", ""), "unittest.py", "'unittest'"),
        (write("tests/json.py", ""), "tests/json.py", "'json'"),  # tests/ is no package: a sys.path root
        (write("clade_results_plugin.py", ""), "clade_results_plugin.py", "grader"),
        (write("bin/pytest", "#!/bin/sh\n"), "bin/pytest", "executable"),
        (write("python3.11", "#!/bin/sh\n"), "python3.11", "executable"),
        (
            replace("pyproject.toml", 'testpaths = ["tests"]', 'addopts = "-p x"'),
            "pyproject.toml",
            "whole file",
        ),
        (replace("setup.cfg", "testpaths = tests", "addopts = -p x"), "setup.cfg", "whole file"),
    ],
    ids=lambda value: value if isinstance(value, str) and "/" not in value and " " not in value else None,
)
def test_test_infrastructure_is_dropped_and_put_back(
    tmp_path: Path, edit: Edit, path: str, rule: str
) -> None:
    dropped, repo = graded(tmp_path, edit, write("demo/core.py", "def f():\n    return 2\n"))
    assert list(dropped) == [path]
    assert rule in dropped[path]
    # Put back as the task ships it (or removed); the rest of the diff stays.
    shipped = BASE.get(path)
    assert (repo / path).read_text() == shipped if shipped is not None else not (repo / path).exists()
    assert (repo / "demo/core.py").read_text() == "def f():\n    return 2\n"


@pytest.mark.parametrize(
    "edit",
    [
        write("demo/json.py", "x = 1\n"),  # inside a package: demo.json shadows nothing
        write("demo/helpers.py", "x = 1\n"),
        write("queue.py", "# solved\n"),  # shipped by the task: not added
        replace("pyproject.toml", 'version = "1.0"', 'version = "1.1"'),
        replace("setup.cfg", "name = demo", "name = demo2"),
        write("docs/testing.md", "how to run the tests\n"),
    ],
)
def test_an_honest_change_is_kept(tmp_path: Path, edit: Edit) -> None:
    dropped, _ = graded(tmp_path, edit)
    assert dropped == {}


def test_files_the_hidden_tests_bring_are_exempt(tmp_path: Path) -> None:
    dropped, repo = graded(tmp_path, write("tests/conftest.py", "x = 1\n"), keep=("tests/conftest.py",))
    assert dropped == {}
    assert (repo / "tests/conftest.py").exists()


def test_a_config_file_turned_into_a_symlink_is_dropped(tmp_path: Path) -> None:
    outside = tmp_path / "host-secret.toml"
    outside.write_text('[tool.pytest.ini_options]\naddopts = "-p x"\n')

    def link(repo: Path) -> None:
        (repo / "pyproject.toml").unlink()
        (repo / "pyproject.toml").symlink_to(outside)

    dropped, repo = graded(tmp_path, link)
    assert "symbolic link" in dropped["pyproject.toml"]
    assert not (repo / "pyproject.toml").is_symlink()
    assert (repo / "pyproject.toml").read_text() == PYPROJECT
