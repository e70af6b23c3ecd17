"""The languages of the Aider polyglot layout: toolchain, test command, and what grading protects.

Test commands follow Aider's benchmark (`pytest`, `cargo test -- --include-ignored`,
`go test ./...`, `npm test`, cmake + make; javac and JUnit's console launcher where Aider
runs Gradle) adapted to a sandbox without network: caches and build trees go to /tmp (the
only writable place besides the repository; an exec tmpfs when grading) and the
dependencies a language needs (jest, the JUnit jars, the crates) are in the toolchain
image (`image.py`).
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from fnmatch import fnmatch

# The names live with the options that use them; re-exported for the benchmark's modules.
from contracts.benchmark_options import LANGUAGES as LANGUAGES
from contracts.benchmark_options import LanguageName as LanguageName

# Always in Clade's base image, so loading these needs no probe of the image.
BASE_IMAGE_LANGUAGES: frozenset[str] = frozenset({"python"})
# As in Aider's benchmark: build files that stay as shipped even if config.json lists them.
NEVER_SOLUTION_FILES = frozenset({"CMakeLists.txt", "Cargo.toml"})

_PYTEST_MODULES = frozenset({"pytest", "_pytest", "pluggy", "iniconfig", "packaging", "py", "pygments"})
# Everything a grading sandbox writes outside the repository goes to /tmp.
_COMMON_ENV = {"HOME": "/tmp"}


def _unskip_javascript(text: str) -> str:
    # Exercism marks all but the first test `xtest` (or `xit`, `xdescribe`); Aider's
    # npm-test.sh runs them all.
    return re.sub(r"\bx(test|it|describe)\(", r"\1(", text)


def _unskip_java(text: str) -> str:
    # Exercism marks all but the first test @Disabled; Aider's benchmark removes those.
    return re.sub(r"^[ \t]*@Disabled(\([^)]*\))?[ \t]*\r?\n", "", text, flags=re.MULTILINE)


# Debian's crate packages (thiserror 1, not 2); `librust-<crate>-dev`.
_RUST_CRATES = (
    "anyhow", "counter", "itertools", "num-bigint", "num-traits",
    "permutohedron", "rand", "regex", "thiserror-1", "time",
)  # fmt: skip
GO_CACHE = "/opt/clade-go-cache"
_JAVA_JARS = "/usr/share/java"
_JAVA_CLASSPATH = ":".join(
    f"{_JAVA_JARS}/{jar}.jar"
    for jar in (
        "junit-jupiter-api", "junit-jupiter-params", "junit-platform-commons", "opentest4j",
        "apiguardian-api", "assertj-core", "byte-buddy", "com.android.json",
    )
)  # fmt: skip
# Where the grading command writes the runner's structured report (a host folder, watched).
RESULTS_DIR = "/clade/results"
_JAVA_TEST_SCRIPT = (
    "set -e; out=/tmp/java-build; rm -rf $out; "
    f"cp={_JAVA_CLASSPATH}; "
    'javac -encoding UTF-8 -nowarn -d $out/main -cp "$cp" $(find src/main/java -name "*.java"); '
    'javac -encoding UTF-8 -nowarn -d $out/test -cp "$out/main:$cp" $(find src/test/java -name "*.java"); '
    f"exec java -jar {_JAVA_JARS}/junit-platform-console-standalone.jar execute --disable-banner "
    "--details=tree --fail-if-no-tests --include-engine=junit-jupiter "
    '-cp "$out/main:$out/test:$cp" --scan-classpath $out/test'
)
JAVA_REPORT = "TEST-junit-jupiter.xml"  # the console launcher's legacy XML, one file per engine
GO_REPORT = "go-test.json"
JEST_REPORT = "jest.json"
_JEST_REPORT_ARGS = ("--json", f"--outputFile={RESULTS_DIR}/{JEST_REPORT}")
CATCH_REPORT = "catch.xml"
# Cargo runs the test binaries through this runner: libtest's JSON format is unstable, and
# RUSTC_BOOTSTRAP in the binary's environment (not the compiler's) is what allows it on stable.
_CARGO_RUNNER = "--config \"target.'cfg(all())'.runner = ['env', 'RUSTC_BOOTSTRAP=1']\""


def _go_graded(tests: list[str]) -> list[str]:
    return [
        "sh",
        "-c",
        f"cp -R {GO_CACHE} /tmp/go-cache && exec go test -count=1 -json ./... > {RESULTS_DIR}/{GO_REPORT}",
    ]


def rust_reports(tests: list[str]) -> list[str]:
    return [f"libtest-{index}.json" for index, _ in enumerate(tests)]


def _rust_target(test_file: str) -> str:
    return test_file.rsplit("/", 1)[-1].removesuffix(".rs")


def _rust_graded(tests: list[str]) -> list[str]:
    # One cargo run per test target, each into its own report: libtest's events do not
    # say which binary they come from. The agent's own unit tests (in src/) do not run.
    runs = [
        f"cargo test --offline --no-fail-fast {_CARGO_RUNNER} --test {shlex.quote(_rust_target(test))} "
        f"-- --include-ignored -Z unstable-options --format json > {RESULTS_DIR}/{report} || rc=$?"
        for test, report in zip(tests, rust_reports(tests), strict=True)
    ]
    return ["sh", "-c", "rc=0; " + "; ".join(runs) + "; exit $rc"]


def _cpp_graded(tests: list[str]) -> list[str]:
    # Only the test binary is built (not the CMakeLists' step that runs it without a
    # reporter); then it runs with Catch's XML reporter. Its target is named after the folder.
    return [
        "sh",
        "-c",
        'ex="$(basename "$PWD")"; cmake -S . -B /tmp/build -G \'Unix Makefiles\' -DEXERCISM_RUN_ALL_TESTS=1 '
        '&& make -C /tmp/build "$ex" && exec "/tmp/build/$ex" -r xml -o ' + f"{RESULTS_DIR}/{CATCH_REPORT}",
    ]


@dataclass(frozen=True)
class LanguageSpec:
    name: LanguageName
    tools: tuple[str, ...]  # commands that must exist in the image (`command -v`)
    command: Callable[[list[str]], list[str]]  # test files -> argv, run from the repository
    env: dict[str, str] = field(default_factory=dict)
    # Files the agent may not add: a test runner would pick them up (a conftest that
    # ends the run early, a second TestMain, a jest config, ...).
    runner_files: tuple[str, ...] = ()
    # Top-level modules the agent may not add (they would shadow the runner's own modules).
    shadowed: frozenset[str] = frozenset()
    unskip: Callable[[str], str] | None = None  # applied to the restored test files
    # Grading's command: as `command`, but the runner writes its structured report (the
    # files `reports` names) into RESULTS_DIR. None: graded another way (Python's pytest).
    graded_command: Callable[[list[str]], list[str]] | None = None
    reports: Callable[[list[str]], list[str]] = lambda tests: []
    # The runner's exit codes when some tests failed (an honest run's, as the twins fail).
    failed_exit_codes: frozenset[int] = frozenset({1})
    # What the toolchain image (`image.py`) installs for this language: Debian packages,
    # and npm packages installed on the host.
    debian_packages: tuple[str, ...] = ()
    npm_packages: tuple[str, ...] = ()

    def display_command(self, tests: list[str]) -> str:
        return " ".join(self.command(tests))

    def is_runner_file(self, path: str) -> bool:
        name = path.rsplit("/", 1)[-1]
        if path.split("/", 1)[0].split(".", 1)[0] in self.shadowed:
            return True
        return any(fnmatch(path, pattern) or fnmatch(name, pattern) for pattern in self.runner_files)


SPECS: dict[LanguageName, LanguageSpec] = {
    spec.name: spec
    for spec in (
        LanguageSpec(
            name="python",
            tools=("python",),
            # The test files are named, so a test module the agent adds does not run.
            command=lambda tests: ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
            env={"PYTHONDONTWRITEBYTECODE": "1"},
            runner_files=(
                "conftest.py",
                "pytest.ini",
                "pyproject.toml",
                "setup.cfg",
                "tox.ini",
                "sitecustomize.py",
                "usercustomize.py",
                "__pycache__/*",
                "*/__pycache__/*",
                "*.pyc",
                "*_test.py",
                "test_*.py",
            ),
            # The repository comes first on sys.path: a `unittest.py` there would replace
            # the one the tests import, a `pytest.py` pytest itself.
            shadowed=frozenset(sys.stdlib_module_names) | _PYTEST_MODULES,
        ),
        LanguageSpec(
            name="javascript",
            tools=("node", "npm"),
            command=lambda tests: ["npm", "test", "--offline"],
            env={"npm_config_cache": "/tmp/npm-cache", "npm_config_update_notifier": "false"},
            runner_files=(
                "*.spec.js",
                "*.test.js",
                "package.json",
                ".npmrc",
                "jest.config.*",
                "babel.config.*",
                ".babelrc",
                "node_modules/*",
            ),
            unskip=_unskip_javascript,
            graded_command=lambda tests: ["npm", "test", "--offline", "--", *_JEST_REPORT_ARGS],
            reports=lambda tests: [JEST_REPORT],
            debian_packages=("nodejs",),
            # What the Exercism track's package.json needs to run `jest` (not its linters),
            # and npm itself: Debian's npm does not install in a debootstrap.
            npm_packages=(
                "@babel/core@^7.25.2",
                "@exercism/babel-preset-javascript@^0.2.1",
                "babel-jest@^29.6.4",
                "core-js@~3.37.1",
                "jest@^29.7.0",
                "npm@^10.8.2",
            ),
        ),
        LanguageSpec(
            name="go",
            tools=("go",),
            # The image's warm build cache, copied where go may write (see image.py).
            command=lambda tests: ["sh", "-c", f"cp -R {GO_CACHE} /tmp/go-cache && exec go test ./..."],
            env={"GOCACHE": "/tmp/go-cache", "GOPATH": "/tmp/go", "GOPROXY": "off", "GOTOOLCHAIN": "local"},
            runner_files=("*_test.go", "go.mod", "go.work", "vendor/*"),
            graded_command=_go_graded,
            reports=lambda tests: [GO_REPORT],
            debian_packages=("golang-go",),
        ),
        LanguageSpec(
            name="rust",
            tools=("cargo",),
            command=lambda tests: ["cargo", "test", "--offline", "--", "--include-ignored"],
            env={"CARGO_TARGET_DIR": "/tmp/cargo-target"},
            runner_files=("tests/*", "build.rs", ".cargo/*", "Cargo.toml", "Cargo.lock"),
            graded_command=_rust_graded,
            reports=rust_reports,
            failed_exit_codes=frozenset({101}),  # cargo's, when a test binary failed
            # The crates the exercises' Cargo.toml and .meta/Cargo-example.toml use.
            debian_packages=("cargo", "rustc", *(f"librust-{crate}-dev" for crate in _RUST_CRATES)),
        ),
        LanguageSpec(
            name="java",
            tools=("java", "javac"),
            # javac and JUnit's console launcher, as Gradle would run them: Gradle itself
            # would download its own distribution and the jars.
            command=lambda tests: ["sh", "-c", _JAVA_TEST_SCRIPT],
            runner_files=("src/test/*", "*.gradle", "*.gradle.kts", "gradle.properties", "gradle/*"),
            unskip=_unskip_java,
            graded_command=lambda tests: ["sh", "-c", f"{_JAVA_TEST_SCRIPT} --reports-dir {RESULTS_DIR}"],
            reports=lambda tests: [JAVA_REPORT],
            # JUnit 5's console launcher instead of Gradle; org.json for rest-api.
            debian_packages=(
                "openjdk-21-jdk-headless",
                "junit5",
                "libassertj-core-java",
                "libandroid-json-java",
            ),
        ),
        LanguageSpec(
            name="cpp",
            tools=("cmake", "make", "c++"),
            # Exercism's CMakeLists runs the tests as the last step of the build.
            command=lambda tests: [
                "sh",
                "-c",
                "cmake -S . -B /tmp/build -G 'Unix Makefiles' -DEXERCISM_RUN_ALL_TESTS=1 "
                "&& make -C /tmp/build",
            ],
            runner_files=("CMakeLists.txt", "*.cmake", "test/*"),
            graded_command=_cpp_graded,
            reports=lambda tests: [CATCH_REPORT],
            # Catch exits with the number of failed test cases; above 127, a signal.
            failed_exit_codes=frozenset(range(1, 128)),
            # gigasecond and meetup build against Boost.Date_Time.
            debian_packages=("cmake", "make", "g++", "libboost-date-time-dev"),
        ),
    )
}


def sandbox_env(spec: LanguageSpec) -> dict[str, str]:
    return {**_COMMON_ENV, **spec.env}
