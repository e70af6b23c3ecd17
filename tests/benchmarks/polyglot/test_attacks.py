"""A wrong solution that ends the test process with status 0, or forges the runner's report, is
caught in every compiled language: the verdict is "tampered", never resolved.

Each attack replaces the solution of the toolchain fixture (`toolchains/`, digit-sum) with
a file from `attacks/`: `exit_*` end the process with status 0 before (or while) the tests
run (a C++ static initialiser calling `_Exit(0)`, Go's `init` calling `os.Exit(0)`, a Rust
constructor in `.init_array` calling `process::exit(0)`, a Java static block calling
`System.exit(0)`, JavaScript's `process.exit(0)` at import); `forge_*` write a report in
which every test of the test files passed (twins included, as they look like any other
test). Real Docker and the toolchain image; these fail, never skip, without an engine.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import GradeReport, find_task
from benchmarks.polyglot import Polyglot
from sandbox.base import SandboxBackend

from .layouts import agent_diff, write
from .test_toolchains import COMPILED, TOOLCHAINS, task_id, toolchain_image

ATTACKS = Path(__file__).parent / "attacks"
SOLUTION = {
    "cpp": "digit_sum.cpp",
    "go": "digit_sum.go",
    "java": "src/main/java/DigitSum.java",
    "javascript": "digit-sum.js",
    "rust": "src/lib.rs",
}
SUFFIX = {"cpp": "cpp", "go": "go", "java": "java", "javascript": "js", "rust": "rs"}
__all__ = ["toolchain_image"]  # the fixture, shared with test_toolchains


@pytest.fixture(scope="module")
def polyglot() -> Polyglot:
    return Polyglot(root=TOOLCHAINS, available_languages=COMPILED)


def attack(
    polyglot: Polyglot, backend: SandboxBackend, image: str, tmp_path: Path, language: str, kind: str
) -> GradeReport:
    task = find_task(polyglot, task_id(language))
    source = (ATTACKS / f"{kind}_{language}.{SUFFIX[language]}").read_text()
    diff = agent_diff(polyglot, task, tmp_path, write(SOLUTION[language], source))
    return polyglot.grade(task, diff, backend, image, 300)


@pytest.mark.docker
@pytest.mark.parametrize("language", COMPILED)
def test_a_process_that_exits_0_early_is_tampered(
    polyglot: Polyglot,
    docker_backend: tuple[SandboxBackend, str],
    toolchain_image: str,
    tmp_path: Path,
    language: str,
) -> None:
    backend, image = docker_backend
    report = attack(polyglot, backend, image, tmp_path, language, "exit")
    assert report.tests_exit_code == 0, report.reason + "\n" + report.log_tail  # what used to resolve it
    assert not report.resolved
    assert report.tampered is not None and report.reason == f"tampered: {report.tampered}"
    assert "exited 0" in report.tampered


@pytest.mark.docker
@pytest.mark.parametrize("language", COMPILED)
def test_a_forged_all_passed_report_is_tampered(
    polyglot: Polyglot,
    docker_backend: tuple[SandboxBackend, str],
    toolchain_image: str,
    tmp_path: Path,
    language: str,
) -> None:
    backend, image = docker_backend
    report = attack(polyglot, backend, image, tmp_path, language, "forge")
    assert not report.resolved, report.reason + "\n" + report.log_tail
    assert report.tampered is not None, report.reason + "\n" + report.log_tail
    # Which evidence the verdict names first depends on timing: a twin reported passed, the
    # runner's own write on top of the forgery, or a test's forged event beside its real one.
    caught_by = ("must-fail twin", "written 2 times", "two different outcomes")
    assert any(evidence in report.tampered for evidence in caught_by), report.tampered


@pytest.mark.docker
def test_a_forged_jest_report_left_as_the_last_word_is_caught_by_the_twins(
    polyglot: Polyglot, docker_backend: tuple[SandboxBackend, str], toolchain_image: str, tmp_path: Path
) -> None:
    backend, image = docker_backend
    # The forgery of `forge_javascript.js`, then `process.exit(0)`: jest never writes its own.
    report = attack(polyglot, backend, image, tmp_path, "javascript", "forgeexit")
    assert not report.resolved and report.tests_exit_code == 0
    assert report.tampered is not None and "must-fail twin" in report.tampered, report.reason
