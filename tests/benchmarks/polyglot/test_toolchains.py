"""Every polyglot language in the toolchain image: one exercise each in the real Exercism
layout (`toolchains/`, written for Clade), gold resolves and the stub does not.

The Docker tests build the toolchain image once per machine (`clade images build
--benchmark polyglot`; many minutes the first time) and fail, never skip, without an engine.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks import TestStatus, find_task
from benchmarks.polyglot import Polyglot
from benchmarks.polyglot.image import PolyglotImageRecipe, ensure_polyglot_image, polyglot_image_tag
from benchmarks.polyglot.languages import SPECS, LanguageName
from benchmarks.polyglot.layout import add_crates
from cli.options import OptionSyntaxError, parse_benchmark
from sandbox.base import SandboxBackend
from sandbox.images.rootfs import RootfsRecipe

from .layouts import agent_diff, write

TOOLCHAINS = Path(__file__).parent / "toolchains"
COMPILED: list[LanguageName] = ["cpp", "go", "java", "javascript", "rust"]


@pytest.fixture(scope="module")
def polyglot() -> Polyglot:
    return Polyglot(root=TOOLCHAINS, available_languages=COMPILED)


def task_id(language: str) -> str:
    return f"polyglot__{language}__digit-sum"


def patch_paths(patch: str) -> list[str]:
    return re.findall(r"^diff --git a/(\S+) ", patch, flags=re.MULTILINE)


def test_tasks_grade_in_the_toolchain_image_in_a_folder_named_after_the_exercise(polyglot: Polyglot) -> None:
    assert sorted(polyglot.languages) == COMPILED
    for language in COMPILED:
        task = find_task(polyglot, task_id(language))
        assert task.image == polyglot_image_tag() == polyglot.toolchain_image
        # Exercism's CMakeLists.txt takes the exercise's name from its folder's name.
        assert task.repo_path == "/clade/exercises/digit-sum"
    other = Polyglot(root=TOOLCHAINS, available_languages=["go"], languages=["go"], image="mine:1")
    assert find_task(other, task_id("go")).image == "mine:1"


def test_java_gold_patch_adds_the_examples_helper_class(polyglot: Polyglot) -> None:
    task = find_task(polyglot, task_id("java"))
    # The example's Digits.java goes beside the solution; build.gradle and the tests stay.
    assert patch_paths(task.patch) == ["src/main/java/DigitSum.java", "src/main/java/Digits.java"]
    assert "final class Digits" in task.patch


def test_rust_repository_lists_the_crates_the_example_uses(polyglot: Polyglot, tmp_path: Path) -> None:
    task = find_task(polyglot, task_id("rust"))
    repo = tmp_path / "repo"
    polyglot.prepare_repo(task, repo)
    # Any version: the image holds the one Debian packages, not the example's old pin.
    assert (repo / "Cargo.toml").read_text().endswith('[dependencies]\nitertools = "*"\n')
    assert patch_paths(task.patch) == ["src/lib.rs"]
    assert "standard library and the crates itertools." in task.problem_statement
    assert add_crates('[package]\nname = "x"\n\n[dependencies]\nrand = "0.8"\n', ("regex",)) == (
        '[package]\nname = "x"\n\n[dependencies]\nregex = "*"\nrand = "0.8"\n'
    )


def test_skipped_javascript_and_java_tests_all_run() -> None:
    unskip_js, unskip_java = SPECS["javascript"].unskip, SPECS["java"].unskip
    assert unskip_js is not None and unskip_java is not None
    spec = (TOOLCHAINS / "javascript/exercises/practice/digit-sum/digit-sum.spec.js").read_text()
    assert "xtest(" in spec and "xit(" in spec
    unskipped = unskip_js(spec + "xdescribe('more', () => {});\nconst maxit = (a) => a;\n")
    assert "xtest(" not in unskipped and "xit(" not in unskipped and "xdescribe(" not in unskipped
    assert "  it('many nines'" in unskipped and "describe('more'" in unskipped and "maxit" in unskipped
    java = (TOOLCHAINS / "java/exercises/practice/digit-sum/src/test/java/DigitSumTest.java").read_text()
    assert "@Disabled" in java and "@Disabled" not in unskip_java(java)


def test_image_recipe_installs_every_language() -> None:
    recipe = PolyglotImageRecipe()
    rootfs = recipe.base.rootfs
    assert rootfs.suite == "trixie"
    installed = {*rootfs.packages, *rootfs.apt_packages}
    for spec in SPECS.values():
        assert set(spec.debian_packages) <= installed, spec.name
    # Crates (and Boost) by apt after debootstrap, whose resolver cannot follow virtual packages.
    assert "librust-regex-dev" in rootfs.apt_packages and "libboost-date-time-dev" in rootfs.apt_packages
    assert not any(package.startswith("librust-") for package in rootfs.packages)
    assert "jest@^29.7.0" in recipe.npm_packages and any(p.startswith("npm@") for p in recipe.npm_packages)
    # The base image's OS layer keeps its key (and its cache) without apt packages.
    assert RootfsRecipe().key() == RootfsRecipe(apt_packages=()).key() != rootfs.key()
    assert polyglot_image_tag() == recipe.tag() == PolyglotImageRecipe().tag()


def test_bench_check_options_from_the_command_line(tmp_path: Path) -> None:
    config = parse_benchmark(
        "polyglot",
        [f"root={tmp_path}", "languages=[go, rust]", "exercises=[bowling]", "image=my/tools:1"],
        None,
    )
    assert config.name == "polyglot"
    assert config.options["root"] == str(tmp_path.resolve())
    assert (config.options["languages"], config.options["exercises"]) == (["go", "rust"], ["bowling"])
    assert config.options["image"] == "my/tools:1"
    with pytest.raises(OptionSyntaxError, match="KEY=VALUE"):
        parse_benchmark("polyglot", ["languages"], None)


@pytest.fixture(scope="module")
def toolchain_image(docker_backend: tuple[SandboxBackend, str]) -> str:
    backend, _ = docker_backend
    return ensure_polyglot_image(backend.images)


@pytest.mark.docker
@pytest.mark.parametrize("language", COMPILED)
def test_gold_resolves_and_stub_does_not_in_the_toolchain_image(
    polyglot: Polyglot, docker_backend: tuple[SandboxBackend, str], toolchain_image: str, language: str
) -> None:
    backend, base_image = docker_backend
    task = find_task(polyglot, task_id(language))
    gold = polyglot.grade(task, task.patch, backend, base_image, 300)
    assert gold.resolved, gold.reason + "\n" + gold.log_tail
    # Resolved by the runner's report, with the twins failing (so the runner exits non-zero).
    assert gold.tampered is None and "must-fail twins failed" in gold.reason
    assert gold.tests_exit_code not in (0, None)
    test_file = task.FAIL_TO_PASS[0]
    per_test = {name: status for name, status in gold.test_statuses.items() if "::" in name}
    assert len(per_test) == (1 if language == "go" else 3)  # Go's one table-driven test
    assert (
        set(per_test.values()) == {TestStatus.PASSED} and gold.test_statuses[test_file] is TestStatus.PASSED
    )
    empty = polyglot.grade(task, "", backend, base_image, 300)
    assert not empty.resolved and empty.tests_exit_code not in (0, None), empty.log_tail
    assert empty.tampered is None and empty.reason.startswith("not resolved: tests of"), empty.reason
    assert empty.test_statuses[test_file] is TestStatus.FAILED


@pytest.mark.docker
def test_a_javascript_test_skipped_with_xit_is_run(
    polyglot: Polyglot, docker_backend: tuple[SandboxBackend, str], toolchain_image: str, tmp_path: Path
) -> None:
    backend, base_image = docker_backend
    task = find_task(polyglot, task_id("javascript"))
    # Right for the first two tests, wrong for the one marked `xit`.
    almost = "export const digitSum = (n) => (n > 9999 ? 0 : [...String(n)].reduce((s, d) => s + +d, 0));\n"
    diff = agent_diff(polyglot, task, tmp_path, write("digit-sum.js", almost))
    report = polyglot.grade(task, diff, backend, base_image, 300)
    assert not report.resolved and "many nines" in report.log_tail


@pytest.mark.docker
def test_the_workers_backend_probes_the_toolchain_image(
    docker_backend: tuple[SandboxBackend, str], toolchain_image: str
) -> None:
    loaded = Polyglot(root=TOOLCHAINS)  # no available_languages: the image is probed, on the worker
    assert sorted(loaded.languages) == COMPILED
    backend, _ = docker_backend
    for task in loaded.tasks():
        loaded.check_environment(task, backend)  # every language's toolchain is there
