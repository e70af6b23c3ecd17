"""The languages of the Aider polyglot layout: toolchain, test command, and what grading protects.

Test commands follow Aider's benchmark (`pytest`, `cargo test -- --include-ignored`,
`go test ./...`, `npm test`, gradle, cmake + make) adapted to a sandbox without
network: caches go to /tmp (the only writable place besides the repository) and the
dependencies a language needs (jest, the JUnit jars, ...) must already be in the image.
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
    # Exercism marks all but the first test `xtest`; Aider's npm-test.sh runs them all.
    return re.sub(r"\bxtest\(", "test(", text)


def _unskip_java(text: str) -> str:
    # Exercism marks all but the first test @Disabled; Aider's benchmark removes those.
    return re.sub(r"^[ \t]*@Disabled(\([^)]*\))?[ \t]*\r?\n", "", text, flags=re.MULTILINE)


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
        ),
        LanguageSpec(
            name="go",
            tools=("go",),
            command=lambda tests: ["go", "test", "./..."],
            env={"GOCACHE": "/tmp/go-cache", "GOPATH": "/tmp/go", "GOPROXY": "off", "GOTOOLCHAIN": "local"},
            runner_files=("*_test.go", "go.mod", "go.work", "vendor/*"),
        ),
        LanguageSpec(
            name="rust",
            tools=("cargo",),
            command=lambda tests: ["cargo", "test", "--offline", "--", "--include-ignored"],
            env={"CARGO_TARGET_DIR": "/tmp/cargo-target"},
            runner_files=("tests/*", "build.rs", ".cargo/*", "Cargo.toml", "Cargo.lock"),
        ),
        LanguageSpec(
            name="java",
            tools=("java", "gradle"),
            command=lambda tests: ["gradle", "test", "--offline", "--no-daemon", "--console=plain"],
            env={"GRADLE_OPTS": "-Dorg.gradle.daemon=false"},
            runner_files=("src/test/*", "*.gradle", "*.gradle.kts", "gradle.properties", "gradle/*"),
            unskip=_unskip_java,
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
        ),
    )
}


def sandbox_env(spec: LanguageSpec) -> dict[str, str]:
    return {**_COMMON_ENV, **spec.env}
