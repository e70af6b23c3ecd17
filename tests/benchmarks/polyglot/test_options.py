"""Options name the wrong field; languages the image cannot run are refused when loading."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from benchmarks import BenchmarkError, get_benchmark
from benchmarks.base import OptionError
from benchmarks.catalog import BenchmarkCatalog
from benchmarks.polyglot import Polyglot, PolyglotOptionsError, ToolchainMissing
from benchmarks.polyglot.languages import SPECS, LanguageName
from benchmarks.registry import benchmark_config
from contracts.benchmark_options import BenchmarkOptionError
from sandbox.base import SandboxError

from .layouts import write_exercise, write_rust_exercise


# Checked by the options model (the registry's one translation) ...
@pytest.mark.parametrize(
    ("options", "field", "message"),
    [
        (
            {"langauges": ["python"]},
            "langauges",
            r"unknown option of polyglot \(known: root, languages",
        ),
        ({"languages": ["python", "cobol"]}, "languages.1", "'python', 'javascript', 'go'"),
        ({"languages": []}, "languages", "at least 1"),
        ({"languages": ["python", "python"]}, "languages", "twice"),
        ({"root": "/nonexistent/polyglot"}, "root", "is not a folder"),
        ({"available_languages": "python"}, "available_languages", "valid list"),
        ({"probe": "docker"}, "probe", "unknown option of polyglot"),
    ],
)
def test_bad_options_name_the_field(options: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(BenchmarkOptionError, match=message) as caught:
        get_benchmark("polyglot", **options)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}: ")
    assert isinstance(caught.value, ValueError)


# ... and by loading, which alone sees the folders.
@pytest.mark.parametrize(
    ("options", "field", "message"),
    [
        (
            {"exercises": ["tide-table", "no-such-thing"]},
            "exercises.1",
            "no exercise 'no-such-thing' in python",
        ),
        ({"exercises": ["rust/tide-table"]}, "exercises.0", "no exercise 'rust/tide-table'"),
        ({"languages": ["go"]}, "languages.0", "no exercises in .*go/exercises/practice"),
    ],
)
def test_options_only_loading_can_check_name_the_field(
    options: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(PolyglotOptionsError, match=message) as caught:
        get_benchmark("polyglot", **options)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"polyglot option {field!r}: ")
    assert isinstance(caught.value, BenchmarkError) and isinstance(caught.value, ValueError)


def test_a_probe_is_a_python_hook_not_an_option() -> None:
    with pytest.raises(PolyglotOptionsError, match="must be a function"):
        Polyglot(probe="docker")  # type: ignore[arg-type]


def test_root_without_language_folders(tmp_path: Path) -> None:
    with pytest.raises(PolyglotOptionsError, match="has no <language>/exercises/practice") as caught:
        Polyglot(root=tmp_path)
    assert caught.value.field == "root"


def test_run_configuration_options() -> None:
    # A run configuration's options are typed before anything loads: a wrong value names it.
    with pytest.raises(BenchmarkOptionError) as caught:
        benchmark_config("polyglot", {"languages": ["klingon"]})
    assert caught.value.field == "languages.0"
    # What only loading can find is an OptionError naming the option, for the service's 422.
    with pytest.raises(OptionError) as found:
        BenchmarkCatalog().get(benchmark_config("polyglot", {"exercises": ["no-such-thing"]}))
    assert found.value.field == "exercises.0"
    loaded = BenchmarkCatalog().get(benchmark_config("polyglot", {"exercises": ["python/tide-table"]}))
    assert [task.instance_id for task in loaded.tasks()] == ["polyglot__python__tide-table"]


class FakeProbe:
    def __init__(self, found: set[str] | None = None, error: Exception | None = None) -> None:
        self.found = found or set()
        self.error = error
        self.calls: list[list[str]] = []

    def __call__(self, tools: Sequence[str]) -> set[str]:
        self.calls.append(list(tools))
        if self.error is not None:
            raise self.error
        return self.found & set(tools)


def test_python_needs_no_probe() -> None:
    probe = FakeProbe()
    assert len(Polyglot(probe=probe).tasks()) >= 6
    assert probe.calls == []


def test_language_without_toolchain_is_refused(tmp_path: Path) -> None:
    write_rust_exercise(tmp_path)
    probe = FakeProbe(found={"python", "go"})
    with pytest.raises(ToolchainMissing) as caught:
        Polyglot(root=tmp_path, languages=["rust"], probe=probe)
    message = str(caught.value)
    assert "rust needs `cargo`" in message
    assert "cargo test --offline -- --include-ignored" in message
    assert "remove them from the `languages` option" in message
    assert probe.calls == [["cargo"]]
    # The same language loads where the image has its toolchain.
    assert len(Polyglot(root=tmp_path, probe=FakeProbe(found={"cargo"})).tasks()) == 1


def test_every_missing_tool_is_named(tmp_path: Path) -> None:
    write_rust_exercise(tmp_path)
    write_exercise(
        tmp_path,
        "java",
        "hello",
        {
            "src/main/java/Hello.java": "",
            "src/test/java/HelloTest.java": "",
            ".meta/src/reference/java/Hello.java": "x",
        },
        solution=["src/main/java/Hello.java"],
        test=["src/test/java/HelloTest.java"],
        example=[".meta/src/reference/java/Hello.java"],
    )
    with pytest.raises(ToolchainMissing) as caught:
        Polyglot(root=tmp_path, probe=FakeProbe(found={"java"}))
    assert "java needs `javac`" in str(caught.value) and "rust needs `cargo`" in str(caught.value)


def test_declared_available_languages_skip_the_probe(tmp_path: Path) -> None:
    write_rust_exercise(tmp_path)
    probe = FakeProbe()
    with pytest.raises(ToolchainMissing, match="available_languages lists only python; remove rust"):
        Polyglot(root=tmp_path, available_languages=["python"], probe=probe)
    assert len(Polyglot(root=tmp_path, available_languages=["rust"], probe=probe).tasks()) == 1
    assert probe.calls == []


def test_a_failed_probe_is_a_benchmark_error(tmp_path: Path) -> None:
    write_rust_exercise(tmp_path)
    probe = FakeProbe(error=SandboxError("Docker engine unreachable"))
    with pytest.raises(
        ToolchainMissing, match=r"could not check .*cargo.*Docker engine unreachable.*available_languages"
    ):
        Polyglot(root=tmp_path, probe=probe)


def test_unskipping_follows_aider() -> None:
    javascript = SPECS["javascript"].unskip
    java = SPECS["java"].unskip
    assert javascript is not None and java is not None
    assert (
        javascript("test('a', f);\nxtest('b', g);\nmaxtest(1);\n")
        == "test('a', f);\ntest('b', g);\nmaxtest(1);\n"
    )
    source = '  @Test\n  @Disabled("Remove to run test")\n  public void b() {}\n  @Disabled\n  void c() {}\n'
    assert java(source) == "  @Test\n  public void b() {}\n  void c() {}\n"


@pytest.mark.parametrize(
    ("language", "path", "blocked"),
    [
        ("python", "conftest.py", True),
        ("python", "sub/conftest.py", True),
        ("python", "pytest.py", True),
        ("python", "__pycache__/tide_table.cpython-311.pyc", True),
        ("python", "extra_test.py", True),
        ("python", "helpers.py", False),
        ("python", "unittest.py", True),
        ("python", "re/__init__.py", True),
        ("python", "_pytest/main.py", True),
        ("python", "lib/os.py", False),
        ("go", "more_test.go", True),
        ("go", "helper.go", False),
        ("rust", "tests/cheat.rs", True),
        ("rust", "src/util.rs", False),
        ("javascript", "jest.config.js", True),
        ("java", "src/test/java/Cheat.java", True),
        ("java", "src/main/java/Util.java", False),
        ("cpp", "CMakeLists.txt", True),
    ],
)
def test_runner_files(language: LanguageName, path: str, blocked: bool) -> None:
    assert SPECS[language].is_runner_file(path) is blocked
