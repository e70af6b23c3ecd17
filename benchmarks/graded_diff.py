"""The graded diff: what of an agent's changes the grader leaves out, because it is test infrastructure.

Grading runs the hidden tests in a process that also runs the agent's code. Files that the
test runner or the interpreter load on their own, before or around the tests, could decide
the verdict instead of the tests; so after the agent's diff is applied (and before the
hidden tests are), every path the diff touches that matches a rule below is put back as
the task ships it (or removed, when the diff added it), and listed on the evaluation with
the rule ("dropped for grading"). The rules, for Python test runs:

1. `conftest.py`, anywhere: pytest loads it as a plugin (its hooks can rewrite reports).
2. `pytest.ini`, `.pytest.ini`, `pytest.toml`, `tox.ini`, anywhere: pytest's configuration
   (`addopts = -p plugin`, `python_files`, ...). tox.ini is dropped whole.
3. `setup.cfg` and `pyproject.toml`, anywhere, when their test settings change
   (`[tool:pytest]`; `[tool.pytest*]` or a `pytest11` entry point): the whole file's change
   is left out, and the entry says so. Other changes to them stay.
4. `sitecustomize.py`, `usercustomize.py`: the interpreter imports them at start-up.
5. `*.pth`: `site` executes their `import` lines at start-up.
6. Anything under an `*.egg-info/` or `*.dist-info/` folder: package metadata, whose
   `entry_points.txt` makes pytest load a plugin (`pytest11`).
7. Compiled Python (`*.pyc`, `*.pyo`, `__pycache__/`): an unchecked-hash .pyc replaces its
   source unseen.
8. A module the diff adds that shadows the standard library, the test runner or the
   grader's plugin (`unittest.py`, `pytest.py`, `_pytest/`, `pluggy/`, ...; see
   `SHADOWED_MODULES`) at a `sys.path` root: the repository's root, or any folder that is
   not a package (no `__init__.py`), which is how pytest's default import mode reaches it.
   A file the task already ships is never "added", so an exercise named like a standard
   module keeps its solution.
9. An executable the diff adds named like the test runner or the interpreter (`pytest`,
   `py.test`, `python`, `python3`, `python3.11`, ...).

`keep` names paths exempt from the rules: the hidden tests' own files (put back by the
grader anyway) and, for SWE-bench, files the reference fix changes too.

Other languages get the same in spirit from their benchmarks: Polyglot restores every
file an exercise ships except the solution (test files, `package.json`, `Cargo.toml`,
`CMakeLists.txt`, `go.mod`, ...) and removes added files its runner would pick up
(`*_test.go`, `build.rs`, `jest.config.*`, `tests/*`, ...); see `polyglot/grading.py`.
"""

from __future__ import annotations

import configparser
import re
import sys
import tomllib
from collections.abc import Collection
from pathlib import Path, PurePosixPath
from typing import Any

from benchmarks.diffs import touched_paths
from benchmarks.gitops import git, reset_paths

# The grader's pytest plugin (pytest_grading.PLUGIN_MODULE); named here so the grader's
# own module can import this one.
GRADER_MODULES = frozenset({"clade_results_plugin"})
RUNNER_MODULES = frozenset(
    {"pytest", "_pytest", "pluggy", "py", "iniconfig", "packaging", "exceptiongroup", "tomli", "pygments"}
)
SHADOWED_MODULES = frozenset(sys.stdlib_module_names) | RUNNER_MODULES | GRADER_MODULES
PYTEST_CONFIG_FILES = frozenset({"pytest.ini", ".pytest.ini", "pytest.toml", "tox.ini"})
STARTUP_MODULES = frozenset({"sitecustomize.py", "usercustomize.py"})
RUNNER_EXECUTABLES = re.compile(r"^(?:pytest|py\.test|python[0-9.]*|pytest-[0-9.]+|py\.test-[0-9.]+)$")
_MODULE_SUFFIXES = (".py", ".pyc", ".pyo", ".pyd", ".so", ".pyw")
MAX_CONFIG_BYTES = 2_000_000


def drop_test_infrastructure(repo: Path, diff: str, *, keep: Collection[str] = ()) -> dict[str, str]:
    """Put back what `diff` (just applied to `repo`) did to test infrastructure; return
    {path: the rule that dropped it}, in the diff's order."""
    dropped: dict[str, str] = {}
    for path in touched_paths(diff):
        if path in keep:
            continue
        why = infrastructure_rule(repo, path)
        if why is not None:
            dropped[path] = why
    reset_paths(repo, dropped)
    return dropped


def infrastructure_rule(repo: Path, path: str) -> str | None:
    """Why the change to `path` (relative to `repo`, the diff applied) is test infrastructure,
    or None when it is not."""
    parts = PurePosixPath(path).parts
    name = parts[-1] if parts else path
    if name == "conftest.py":
        return "conftest.py: pytest loads it as a plugin"
    if name in PYTEST_CONFIG_FILES:
        return f"{name}: pytest's configuration"
    if name in STARTUP_MODULES:
        return f"{name}: the interpreter imports it at start-up"
    if name.endswith(".pth"):
        return ".pth file: site runs its import lines at start-up"
    if any(part.endswith((".egg-info", ".dist-info")) for part in parts[:-1]) or name.endswith(
        (".egg-info", ".dist-info")
    ):
        return "package metadata: its entry points can load pytest plugins"
    if name.endswith((".pyc", ".pyo")) or "__pycache__" in parts:
        return "compiled Python: it can replace its source unseen"
    if name in ("setup.cfg", "pyproject.toml"):
        changed = _changed_test_settings(repo, path)
        return f"{name}: {changed}; the whole file's change left out" if changed else None
    if _exists_in_head(repo, path):
        return None  # the task ships it: it shadows nothing the honest run does not
    if RUNNER_EXECUTABLES.match(name):
        return f"an executable named like the test runner ({name})"
    shadowed = _shadowed_module(repo, parts)
    if shadowed is not None:
        return f"shadows the module {shadowed!r} (standard library, test runner or grader)"
    return None


def _shadowed_module(repo: Path, parts: tuple[str, ...]) -> str | None:
    """The module name `parts` adds at a sys.path root if it is one of SHADOWED_MODULES."""
    for index, part in enumerate(parts):
        parent = repo.joinpath(*parts[:index])
        if index > 0 and (parent / "__init__.py").exists():
            continue  # inside a package: imported as pkg.<name>, shadows nothing
        is_file = index == len(parts) - 1
        module = part.split(".", 1)[0] if (not is_file or part.endswith(_MODULE_SUFFIXES)) else None
        if module in SHADOWED_MODULES:
            return module
    return None


def _exists_in_head(repo: Path, path: str) -> bool:
    return git(repo, "cat-file", "-e", f"HEAD:{path}").returncode == 0


def _changed_test_settings(repo: Path, path: str) -> str | None:
    """What changed in the pytest settings of a setup.cfg or pyproject.toml, or None."""
    before_text = git(repo, "show", f"HEAD:{path}").stdout if _exists_in_head(repo, path) else ""
    target = repo / path
    if target.is_symlink() or not target.resolve().is_relative_to(repo.resolve()):
        return "it is a symbolic link or reaches outside the repository"
    if not target.exists():
        after_text = ""
    elif not target.is_file() or target.stat().st_size > MAX_CONFIG_BYTES:
        return "it is not a readable configuration file"
    else:
        after_text = target.read_text(errors="replace")
    reader = _pyproject_settings if path.endswith("pyproject.toml") else _setup_cfg_settings
    before, after = reader(before_text), reader(after_text)
    if after is None:
        return "it does not parse"
    if before != after:
        return "changes its pytest settings or plugins"
    return None


def _pyproject_settings(text: str) -> Any:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    tool = data.get("tool", {})
    project = data.get("project", {})
    entry_points = project.get("entry-points", {}) if isinstance(project, dict) else {}
    pytest_tool = tool.get("pytest") if isinstance(tool, dict) else None
    plugins = entry_points.get("pytest11") if isinstance(entry_points, dict) else None
    return {"tool.pytest": pytest_tool, "pytest11": plugins}


def _setup_cfg_settings(text: str) -> Any:
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    wanted = ("tool:pytest", "pytest", "options.entry_points")
    return {section: dict(parser.items(section)) for section in wanted if parser.has_section(section)}
