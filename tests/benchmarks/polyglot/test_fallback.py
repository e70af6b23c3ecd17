"""Where no twin can be planted, a fallback must-fail test is: a false equality of two small
integers under a fresh name made of the file's test-name words, among the file's tests, in
the file's idiom. The Docker tests run it in the toolchain image: gold resolves with the
fallback failing, and a forged all-passed report is tampered."""

from __future__ import annotations

import difflib
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from benchmarks import find_task
from benchmarks.polyglot import Polyglot
from benchmarks.polyglot.languages import SPECS, LanguageName
from benchmarks.polyglot.testfinder import find_tests
from benchmarks.polyglot.twins import Planted, plant_twins
from sandbox.base import SandboxBackend

from .layouts import agent_diff, write
from .test_attacks import ATTACKS, SOLUTION, SUFFIX
from .test_toolchains import COMPILED, task_id, toolchain_image
from .untwinnable import REAL_TESTS, TEST_FILE, untwinnable_root

__all__ = ["toolchain_image"]  # the fixture, shared with test_toolchains
CLAIM = re.compile(r"(\d+) \* (\d+) == (-?\d+)$")
IDIOM = {
    "go": r"func (Test\w+)\(t \*testing\.T\) \{\n"
    r"\tif got := (\d+) \* (\d+); got != (\d+) \{\n\t\tt\.Fatalf\(",
    "rust": r"#\[test\]\nfn (\w+)\(\) \{\n    assert_eq!\((\d+) \* (\d+), (\d+)\);\n\}",
    "java": r"    @Test\n    public void (\w+)\(\) \{\n"
    r"        assertThat\((\d+) \* (\d+)\)\.isEqualTo\((\d+)\);\n    \}",
    "javascript": r"  test\('([a-z ]+)', \(\) => \{\n"
    r"    expect\((\d+) \* (\d+)\)\.toEqual\((\d+)\);\n  \}\);",
    "cpp": r'TEST_CASE\("([a-z ]+)"\) \{\n    REQUIRE\((\d+) \* (\d+) == (\d+)\);\n\}',
}


def untwinnable_repo(language: LanguageName, tmp_path: Path) -> Path:
    root = untwinnable_root(tmp_path / "root")
    repo = shutil.copytree(root / language / "exercises" / "practice" / "digit-sum", tmp_path / "repo")
    unskip = SPECS[language].unskip
    if unskip is not None:
        path = repo / TEST_FILE[language]
        path.write_text(unskip(path.read_text()))
    return repo


def plant(language: LanguageName, tmp_path: Path) -> tuple[Path, str, str, Planted]:
    repo = untwinnable_repo(language, tmp_path)
    before = (repo / TEST_FILE[language]).read_text()
    planted = plant_twins(language, repo, [TEST_FILE[language]])
    return repo, before, (repo / TEST_FILE[language]).read_text(), planted


@pytest.mark.parametrize("language", COMPILED)
def test_a_fallback_is_planted_where_no_twin_can_be(language: LanguageName, tmp_path: Path) -> None:
    _, before, after, planted = plant(language, tmp_path)
    (fallback,) = planted.twins
    assert planted.fallback() and fallback.fallback is not None and fallback.copy_of == ""
    assert planted.notes == [f"no test in {TEST_FILE[language]} has an expected value a twin can change"]
    claim = CLAIM.match(fallback.fallback)
    assert claim is not None
    left, right, claimed = (int(part) for part in claim.groups())
    assert left * right != claimed and 0 < abs(left * right - claimed) < 9
    # Only lines were added, and the runner finds the fallback among the real tests.
    changed = [line for line in difflib.ndiff(before.splitlines(), after.splitlines()) if line[:1] in "-?"]
    assert changed == []
    names = [test.name for test in find_tests(language, after).tests]
    assert sorted(names) == sorted([*REAL_TESTS[language], fallback.name])
    assert fallback.name not in before
    # In the file's idiom (Java: the AssertJ the file imports), asserting the false equality.
    shown = re.search(IDIOM[language], after)
    assert shown is not None, after
    assert shown.group(1) == fallback.name and shown.groups()[1:] == claim.groups()
    # Made of words of the file's tests and the twin name maker's own.
    words = {word.lower() for word in re.findall(r"[A-Z]?[a-z]+", fallback.name.removeprefix("Test"))}
    assert len(words) >= 2


@pytest.mark.parametrize("language", COMPILED)
def test_fallback_names_and_positions_vary(language: LanguageName, tmp_path: Path) -> None:
    names, positions = set(), set()
    # Positions are drawn at random: 16 tries missed one of three about once in 200 runs; tries
    # go on until every position and 8 names were seen, at most 200 (a miss once in 10^35).
    for attempt in range(200):
        if len(names) >= 8 and positions == {0, 1, 2}:
            break
        _, _, after, planted = plant(language, tmp_path / str(attempt))
        (fallback,) = planted.twins
        names.add(fallback.name)
        order = [test.name for test in find_tests(language, after).tests]
        positions.add(order.index(fallback.name))
        # The real tests after it, which runners that keep the file's order run after it.
        assert fallback.followed_by == tuple(order[order.index(fallback.name) + 1 :])
    assert len(names) >= 8 and positions == {0, 1, 2}


JUNIT_IMPORTS = (
    "import static org.junit.jupiter.api.Assertions.assertEquals;\n"
    "import static org.junit.jupiter.api.Assertions.assertTrue;"
)


def test_java_fallback_uses_junit_assert_equals_when_the_file_does(tmp_path: Path) -> None:
    repo = untwinnable_repo("java", tmp_path)
    path = repo / TEST_FILE["java"]
    junit = (
        path.read_text()
        .replace("import static org.assertj.core.api.Assertions.assertThat;", JUNIT_IMPORTS)
        .replace("assertThat(", "assertTrue(").replace(").isTrue()", ")")
    )  # fmt: skip
    path.write_text(junit)
    planted = plant_twins("java", repo, [TEST_FILE["java"]])
    (fallback,) = planted.twins
    claim = CLAIM.match(fallback.fallback or "")
    assert claim is not None
    left, right, claimed = claim.groups()
    assert f"assertEquals({claimed}, {left} * {right});" in path.read_text()


def test_a_file_with_a_twin_gets_no_fallback(tmp_path: Path) -> None:
    repo = untwinnable_repo("javascript", tmp_path)
    path = repo / TEST_FILE["javascript"]
    path.write_text(path.read_text().replace("toEqual(digitSum(7000))", "toEqual(7)"))
    planted = plant_twins("javascript", repo, [TEST_FILE["javascript"]])
    assert not planted.fallback() and [twin.copy_of for twin in planted.twins] == ["zeroes add nothing"]


def test_a_file_without_tests_gets_no_fallback(tmp_path: Path) -> None:
    repo = untwinnable_repo("go", tmp_path)
    (repo / TEST_FILE["go"]).write_text('package digitsum\n\nimport "testing"\n\nvar _ = testing.Short\n')
    planted = plant_twins("go", repo, [TEST_FILE["go"]])
    assert planted.twins == [] and planted.expected == {TEST_FILE["go"]: []}


def _compile(language: LanguageName, repo: Path) -> subprocess.CompletedProcess[str]:
    test_file = repo / TEST_FILE[language]
    if language == "rust":
        solution = "fn digit_sum(n: u64) -> u64 { n.to_string().bytes().map(|b| u64::from(b - b'0')).sum() }"
        source = test_file.read_text().replace("use digit_sum::*;", solution)
        crate = repo / "standalone.rs"
        crate.write_text(source)
        command = ["rustc", "--test", "--edition", "2021", "-o", str(repo / "standalone"), str(crate)]
    elif language == "cpp":
        command = [
            "g++",
            "-std=c++17",
            "-fsyntax-only",
            "-DEXERCISM_RUN_ALL_TESTS=1",
            "-I",
            str(repo),
            str(test_file),
        ]
    else:
        module = repo / "spec.mjs"
        module.write_text(test_file.read_text())
        command = ["node", "--check", str(module)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.parametrize("language", ["rust", "cpp", "javascript"])
def test_the_fallback_compiles(language: LanguageName, tmp_path: Path) -> None:
    repo, _, after, planted = plant(language, tmp_path)
    built = _compile(language, repo)
    assert built.returncode == 0, built.stderr + "\n" + after
    if language == "rust":  # and it is the one test that fails
        ran = subprocess.run(
            [str(repo / "standalone"), "--include-ignored"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert ran.returncode == 101
        assert f"{planted.twins[0].name} ... FAILED" in ran.stdout and "2 passed; 1 failed" in ran.stdout


@pytest.fixture(scope="module")
def untwinnable(tmp_path_factory: pytest.TempPathFactory) -> Polyglot:
    return Polyglot(
        root=untwinnable_root(tmp_path_factory.mktemp("untwinnable") / "root"), available_languages=COMPILED
    )


@pytest.mark.docker
@pytest.mark.parametrize("language", COMPILED)
def test_gold_resolves_with_the_fallback_failing(
    untwinnable: Polyglot, docker_backend: tuple[SandboxBackend, str], toolchain_image: str, language: str
) -> None:
    backend, image = docker_backend
    task = find_task(untwinnable, task_id(language))
    gold = untwinnable.grade(task, task.patch, backend, image, 300)
    assert gold.resolved and gold.tampered is None, gold.reason + "\n" + gold.log_tail
    assert "and its must-fail fallback test failed" in gold.reason
    assert "no twin could be planted (" in gold.reason and "a fallback must-fail test instead" in gold.reason
    assert gold.tests_exit_code not in (0, None)
    per_test = {name.split("::", 1)[1]: status for name, status in gold.test_statuses.items() if "::" in name}
    assert sorted(per_test) == sorted(REAL_TESTS[language])  # the fallback left out


@pytest.mark.docker
@pytest.mark.parametrize("language", COMPILED)
def test_a_forged_all_passed_report_is_tampered_with_a_fallback(
    untwinnable: Polyglot,
    docker_backend: tuple[SandboxBackend, str],
    toolchain_image: str,
    tmp_path: Path,
    language: str,
) -> None:
    backend, image = docker_backend
    task = find_task(untwinnable, task_id(language))
    source = (ATTACKS / f"forge_{language}.{SUFFIX[language]}").read_text()
    diff = agent_diff(untwinnable, task, tmp_path, write(SOLUTION[language], source))
    report = untwinnable.grade(task, diff, backend, image, 300)
    assert not report.resolved and report.tampered is not None, report.reason + "\n" + report.log_tail
    # The fallback passed in the forgery, jest's own write came on top of it, or a test's forged
    # event stands beside its real one (which of them the verdict names first depends on timing).
    caught_by = ("must-fail fallback test", "written 2 times", "two different outcomes")
    assert any(evidence in report.tampered for evidence in caught_by), report.tampered


@pytest.mark.docker
def test_a_forged_jest_report_left_as_the_last_word_is_caught_by_the_fallback(
    untwinnable: Polyglot, docker_backend: tuple[SandboxBackend, str], toolchain_image: str, tmp_path: Path
) -> None:
    backend, image = docker_backend
    task = find_task(untwinnable, task_id("javascript"))
    source = (ATTACKS / "forgeexit_javascript.js").read_text()
    report = untwinnable.grade(
        task,
        agent_diff(untwinnable, task, tmp_path, write(SOLUTION["javascript"], source)),
        backend,
        image,
        300,
    )
    assert not report.resolved and report.tests_exit_code == 0
    assert report.tampered is not None and "must-fail fallback test" in report.tampered, report.reason
