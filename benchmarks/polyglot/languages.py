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
_JAVA_TEST_SCRIPT = (
    "set -e; out=/tmp/java-build; rm -rf $out; "
    f"cp={_JAVA_CLASSPATH}; "
    'javac -encoding UTF-8 -nowarn -d $out/main -cp "$cp" $(find src/main/java -name "*.java"); '
    'javac -encoding UTF-8 -nowarn -d $out/test -cp "$out/main:$cp" $(find src/test/java -name "*.java"); '
    f"exec java -jar {_JAVA_JARS}/junit-platform-console-standalone.jar execute --disable-banner "
    '--details=tree --fail-if-no-tests -cp "$out/main:$out/test:$cp" --scan-classpath $out/test'
)


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
            debian_packages=("golang-go",),
        ),
        LanguageSpec(
            name="rust",
            tools=("cargo",),
            command=lambda tests: ["cargo", "test", "--offline", "--", "--include-ignored"],
            env={"CARGO_TARGET_DIR": "/tmp/cargo-target"},
            runner_files=("tests/*", "build.rs", ".cargo/*", "Cargo.toml", "Cargo.lock"),
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
            # gigasecond and meetup build against Boost.Date_Time.
            debian_packages=("cmake", "make", "g++", "libboost-date-time-dev"),
        ),
    )
}


def sandbox_env(spec: LanguageSpec) -> dict[str, str]:
    return {**_COMMON_ENV, **spec.env}
