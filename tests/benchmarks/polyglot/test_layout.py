"""The polyglot benchmark reads the Aider layout: tasks, statements, repositories, gold patches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import BrokenTask, find_task, get_benchmark, known_benchmarks
from benchmarks.gitops import apply_patch, git_ok, patch_paths
from benchmarks.polyglot import FIXTURES_DIR, Polyglot
from benchmarks.polyglot.languages import SPECS
from benchmarks.polyglot.layout import pair_examples

from .layouts import write_exercise, write_rust_exercise

PRACTICE = FIXTURES_DIR / "python" / "exercises" / "practice"
FIXTURE_NAMES = sorted(path.name for path in PRACTICE.iterdir() if path.is_dir())


@pytest.fixture(scope="module")
def polyglot() -> Polyglot:
    return Polyglot()


def test_registered_and_loads_the_shipped_python_exercises(polyglot: Polyglot) -> None:
    assert "polyglot" in known_benchmarks()
    assert isinstance(get_benchmark("polyglot"), Polyglot)
    assert len(FIXTURE_NAMES) >= 6
    ids = [task.instance_id for task in polyglot.tasks()]
    assert ids == [f"polyglot__python__{name}" for name in FIXTURE_NAMES]
    assert polyglot.subsets() == {"all": ids, "python": ids}
    assert polyglot.languages == ["python"]


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixture_exercise_task(polyglot: Polyglot, name: str) -> None:
    task = find_task(polyglot, f"polyglot__python__{name}")
    folder = PRACTICE / name
    config = json.loads((folder / ".meta" / "config.json").read_text())["files"]
    module = name.replace("-", "_")
    assert config == {
        "solution": [f"{module}.py"],
        "test": [f"{module}_test.py"],
        "example": [".meta/example.py"],
    }
    assert task.repo == f"polyglot/python/{name}"
    assert task.repo_path == f"/clade/exercises/{name}"  # C++ builds take the name from it
    fail_to_pass, pass_to_pass = task.FAIL_TO_PASS, task.PASS_TO_PASS
    assert fail_to_pass == [f"{module}_test.py"]
    assert pass_to_pass == []
    assert task.test_command == [
        "python",
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        f"{module}_test.py",
    ]
    assert task.test_patch == ""
    # The gold patch turns the stub into the example solution, and touches nothing else.
    assert patch_paths(task.patch) == [f"{module}.py"]
    assert (folder / ".meta" / "example.py").read_text().splitlines()[-1] in task.patch


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_statement_is_instructions_plus_files_to_edit(polyglot: Polyglot, name: str) -> None:
    task = find_task(polyglot, f"polyglot__python__{name}")
    docs = PRACTICE / name / ".docs"
    module = name.replace("-", "_")
    statement = task.problem_statement
    assert (docs / "instructions.md").read_text().strip() in statement
    for optional in ("introduction.md", "instructions.append.md"):
        if (docs / optional).is_file():
            assert (docs / optional).read_text().strip() in statement
    note = statement.split("## Your task", 1)[1]
    assert f"`{module}.py`" in note and f"`{module}_test.py`" in note
    assert "put back" in note
    assert ".meta" not in statement and "example" not in note


def test_statement_order_introduction_instructions_append(polyglot: Polyglot) -> None:
    statement = find_task(polyglot, "polyglot__python__token-bucket").problem_statement
    positions = [
        statement.index(marker) for marker in ("# Introduction", "# Instructions\n", "append", "## Your task")
    ]
    assert positions == sorted(positions)


def test_prepare_repo_holds_stub_and_tests_in_one_commit(polyglot: Polyglot, tmp_path: Path) -> None:
    task = find_task(polyglot, "polyglot__python__tide-table")
    repo = tmp_path / "repo"
    sha = polyglot.prepare_repo(task, repo)
    assert sha == task.base_commit
    assert git_ok(repo, "rev-list", "--count", "HEAD").strip() == "1"
    assert git_ok(repo, "status", "--porcelain") == ""
    assert sorted(git_ok(repo, "ls-files").split()) == ["tide_table.py", "tide_table_test.py"]
    assert (repo / "tide_table.py").read_text() == (PRACTICE / "tide-table" / "tide_table.py").read_text()
    assert not (repo / ".meta").exists() and not (repo / ".docs").exists()
    # Same files, same commit, anywhere; and the gold patch applies to it.
    assert polyglot.prepare_repo(task, tmp_path / "again") == sha
    assert apply_patch(repo, task.patch).applied
    assert (repo / "tide_table.py").read_text() == (
        PRACTICE / "tide-table" / ".meta" / "example.py"
    ).read_text()


def test_prepare_repo_refuses_changed_exercise_files(tmp_path: Path) -> None:
    write_exercise(
        tmp_path,
        "python",
        "echo",
        {
            "echo.py": "def echo(x):\n    pass\n",
            "echo_test.py": "",
            ".meta/example.py": "def echo(x):\n    return x\n",
        },
        solution=["echo.py"],
        test=["echo_test.py"],
        example=[".meta/example.py"],
    )
    benchmark = Polyglot(root=tmp_path)
    (tmp_path / "python" / "exercises" / "practice" / "echo" / "echo_test.py").write_text("# changed\n")
    with pytest.raises(BrokenTask, match="base commit"):
        benchmark.prepare_repo(benchmark.tasks()[0], tmp_path / "repo")


def _write_cpp_exercise(root: Path) -> None:
    write_exercise(
        root,
        "cpp",
        "greeter",
        {
            "CMakeLists.txt": "cmake_minimum_required(VERSION 3.13)\n",
            "greeter.h": "#pragma once\n",
            "greeter.cpp": '#include "greeter.h"\n',
            "greeter_test.cpp": "// tests\n",
            ".meta/example.h": "#pragma once\nint greet();\n",
            ".meta/example.cpp": '#include "greeter.h"\nint greet() { return 1; }\n',
        },
        solution=["greeter.cpp", "greeter.h", "CMakeLists.txt"],
        test=["greeter_test.cpp"],
        example=[".meta/example.cpp", ".meta/example.h"],
    )


def test_layout_with_several_languages(tmp_path: Path) -> None:
    write_rust_exercise(tmp_path)
    _write_cpp_exercise(tmp_path)
    write_exercise(
        tmp_path,
        "go",
        "adder",
        {
            "adder.go": "package adder\n",
            "adder_test.go": "package adder\n",
            ".meta/example.go": "package adder\n\n",
        },
        solution=["adder.go"],
        test=["adder_test.go"],
        example=[".meta/example.go"],
    )
    (tmp_path / "java").mkdir()  # a language folder without exercises is not loaded
    benchmark = Polyglot(root=tmp_path, available_languages=["go", "rust", "cpp"])
    assert benchmark.languages == ["go", "rust", "cpp"]  # in the order of LANGUAGES
    subsets = benchmark.subsets()
    assert subsets["rust"] == ["polyglot__rust__adder"]
    assert subsets["all"] == ["polyglot__go__adder", "polyglot__rust__adder", "polyglot__cpp__greeter"]

    rust = find_task(benchmark, "polyglot__rust__adder")
    assert (
        rust.test_command
        == SPECS["rust"].command([])
        == ["cargo", "test", "--offline", "--", "--include-ignored"]
    )
    assert rust.FAIL_TO_PASS == ["tests/adder.rs"]
    # As in Aider's benchmark, Cargo.toml and CMakeLists.txt are never files to edit.
    assert patch_paths(rust.patch) == ["src/lib.rs"]
    assert "`src/lib.rs`" in rust.problem_statement and "Cargo.toml" not in rust.problem_statement

    cpp = find_task(benchmark, "polyglot__cpp__greeter")
    assert sorted(patch_paths(cpp.patch)) == ["greeter.cpp", "greeter.h"]
    assert "int greet();" in cpp.patch and "CMakeLists" not in cpp.patch

    only = Polyglot(
        root=tmp_path, available_languages=["go", "rust", "cpp"], exercises=["rust/adder", "greeter"]
    )
    assert [task.instance_id for task in only.tasks()] == ["polyglot__rust__adder", "polyglot__cpp__greeter"]
    both = Polyglot(root=tmp_path, available_languages=["go", "rust"], exercises=["adder"])
    assert [task.instance_id for task in both.tasks()] == ["polyglot__go__adder", "polyglot__rust__adder"]


def test_pair_examples() -> None:
    assert pair_examples(("bob.py",), [".meta/example.py"]) == (("bob.py", ".meta/example.py"),)
    java = pair_examples(
        ("src/main/java/Bob.java", "src/main/java/Util.java"),
        [".meta/src/reference/java/Util.java", ".meta/src/reference/java/Bob.java"],
    )
    assert java == (
        ("src/main/java/Bob.java", ".meta/src/reference/java/Bob.java"),
        ("src/main/java/Util.java", ".meta/src/reference/java/Util.java"),
    )
    assert pair_examples(("a.cpp", "a.h"), [".meta/example.h", ".meta/example.cpp"]) == (
        ("a.cpp", ".meta/example.cpp"),
        ("a.h", ".meta/example.h"),
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda folder: (folder / ".meta" / "config.json").unlink(), "missing .meta/config.json"),
        (
            lambda folder: (folder / ".docs" / "instructions.md").unlink(),
            "missing file .docs/instructions.md",
        ),
        (lambda folder: (folder / ".meta" / "example.py").unlink(), "missing file .meta/example.py"),
        (lambda folder: (folder / ".meta" / "config.json").write_text('{"files": {}}'), "files.solution"),
    ],
)
def test_broken_exercise_is_named(tmp_path: Path, change: object, message: str) -> None:
    folder = write_exercise(
        tmp_path,
        "python",
        "echo",
        {"echo.py": "", "echo_test.py": "", ".meta/example.py": ""},
        solution=["echo.py"],
        test=["echo_test.py"],
        example=[".meta/example.py"],
    )
    assert callable(change)
    change(folder)
    with pytest.raises(BrokenTask, match=rf"python/echo: .*{message}"):
        Polyglot(root=tmp_path)
