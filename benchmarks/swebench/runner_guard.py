"""Canaries and forged-output checks for SWE-bench instances that pytest does not run: those
whose test command is Django's `tests/runtests.py` (unittest, verbosity 2) or sympy's `bin/test`.

`plan` finds the runner in the eval script's test command and a test file the command names
(Django: the first module label `a.b` with a file `tests/a/b.py`, the test patch's files
first; sympy: the first `.py` argument) and writes two canaries for it under fresh names
(`canaries.fresh_names`): Django gets a new `unittest.TestCase` class with a must-fail and a
must-pass method, sympy two `def test_...` functions. The grader appends them to the file
after the test patch is applied. `evidence` reads the run back: a canary reported wrong, a
canary missing although other tests of its file were reported, an exit status of 0 although
the must-fail canary ran, and the log checks of `runner_logs` make the verdict "tampered".

There are no twins and no structured report for these runners (yet): code in the test process
that recognises the canaries' literal arithmetic can still pass them off (see
docs/integrity.md).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from benchmarks.base import TestStatus
from benchmarks.canaries import fresh_names, operands
from benchmarks.diffs import split_files, touched_paths
from benchmarks.swebench.runner_logs import (
    END_MARKER,
    START_MARKER,
    Runner,
    credited_passes,
    forged_output,
    test_section,
)

_LABEL = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$")
_FAILED_IMPORT = "unittest.loader._FailedTest"


@dataclass(frozen=True)
class RunnerCanaries:
    """The two canaries of one Django or sympy grading."""

    runner: Runner
    test_file: str  # relative to the repository
    must_fail: str  # method (Django) or function (sympy) name
    must_pass: str
    case: str = ""  # Django: the TestCase class that holds both
    label: str = ""  # Django: the module label the command names

    def is_canary(self, test: str) -> bool:
        return any(self.names(test, name) for name in (self.must_fail, self.must_pass))

    def names(self, test: str, name: str) -> bool:
        if self.runner == "sympy":
            # "test_x", or a failure header's "path.py:test_x" ("path.py::test_x" in newer sympy)
            return test == name or test in (f"{self.test_file}:{name}", f"{self.test_file}::{name}")
        # "name (label.Case)", "name (label.Case.name)" (Python 3.11+), or a failure header's bare
        # "name" (parse_log_django takes the first word of "FAIL: name (label.Case)").
        case, method = re.escape(self.case), re.escape(name)
        full = re.compile(rf"{method} \((?:[\w.]+\.)?{case}(?:\.{method})?\)")
        return test == name or full.fullmatch(test) is not None

    def without(self, statuses: Mapping[str, TestStatus]) -> dict[str, TestStatus]:
        return {test: status for test, status in statuses.items() if not self.is_canary(test)}

    def check(self, statuses: Mapping[str, TestStatus], log: str) -> str | None:
        """Why the canaries' statuses show tampering, or None when they are as they must be."""
        problems = []
        for name, expected in ((self.must_fail, TestStatus.FAILED), (self.must_pass, TestStatus.PASSED)):
            which = "must-fail" if expected is TestStatus.FAILED else "must-pass"
            found = {statuses[test] for test in statuses if self.names(test, name)}
            found |= self._last_line(name, log)
            if not found:
                if self._file_ran(statuses, log):
                    problems.append(f"the {which} canary {name} was never reported")
            elif found != {expected}:
                shown = ", ".join(sorted(status.value for status in found))
                problems.append(f"the {which} canary {name} was reported {shown}")
        return "; ".join(problems) or None

    def _last_line(self, name: str, log: str) -> set[TestStatus]:
        """sympy: the status of `name` on its file's last line, where bin/test writes "[OK]" or
        "[FAIL]" after it ("test_x ok    [FAIL]") and swebench's parser misses it. The canaries
        are the file's last tests, so the must-pass one is always there."""
        if self.runner != "sympy":
            return set()
        words = {"ok": TestStatus.PASSED, "F": TestStatus.FAILED, "E": TestStatus.ERROR}
        last = re.compile(rf"^\s*{re.escape(name)} (ok|F|E)\s+\[(?:OK|FAIL)\]\s*$", re.MULTILINE)
        return {words[word] for word in last.findall(test_section(log))}

    def _file_ran(self, statuses: Mapping[str, TestStatus], log: str) -> bool:
        """Whether other tests of the canaries' file were reported (a module that does not import
        loses its canaries honestly)."""
        if self.runner == "sympy":
            # sympy's test names carry no file: its header ("path.py[3]") or, when a forger
            # printed none, any other test reported (the canaries' file then did import).
            section = test_section(log)
            if re.search(rf"^\s*{re.escape(self.test_file)}\[\?\]", section, re.MULTILINE):
                return False  # "path.py[?]   Failed to import"
            header = re.search(rf"^\s*{re.escape(self.test_file)}\[\d+\]", section, re.MULTILINE)
            return header is not None or any(not self.is_canary(test) for test in statuses)
        if any(_FAILED_IMPORT in test for test in statuses):
            return False
        module = f"({self.label}."
        return any(module in test for test in statuses)


@dataclass(frozen=True)
class Plan:
    """Where one grading's canaries go and how often the test command runs the runner."""

    runner: Runner
    test_file: str
    label: str
    runs: int


def plan(script: str, test_patch: str, repo: Path) -> Plan | None:
    """The runner and canary file of an eval script whose test command is Django's runtests.py or
    sympy's bin/test; None for any other (pytest's have their own guard)."""
    command = _test_command(script)
    if command is None:
        return None
    patched = [path for path in touched_paths(test_patch) if path.endswith(".py")]
    deleted = {part.paths[0] for part in split_files(test_patch) if "\n+++ /dev/null" in part.text}
    for runner, program in (("django", "runtests.py"), ("sympy", "bin/test")):
        runs = [_after(words, program) for words in command if any(w.endswith(program) for w in words[:3])]
        if not runs:
            continue
        args = [word for run in runs for word in run]
        if runner == "django":
            files = {f"tests/{word.replace('.', '/')}.py": word for word in args if _LABEL.match(word)}
        else:
            files = {word: "" for word in args if word.endswith(".py") and not word.startswith("-")}
        ordered = sorted(files, key=lambda path: path not in patched)  # the test patch's files first
        for path in ordered:
            if "'" in path or path in deleted:  # the grader appends to it, in single quotes
                continue
            if runner == "django" and _loads_its_own_tests(repo / path, test_patch):
                continue
            if path in patched or ((repo / path).is_file() and not (repo / path).is_symlink()):
                kind: Runner = "django" if runner == "django" else "sympy"
                return Plan(runner=kind, test_file=path, label=files[path], runs=len(runs))
        return None
    return None


def _loads_its_own_tests(path: Path, test_patch: str) -> bool:
    """A module with unittest's `load_tests` hook picks its own tests: a class appended to it may
    never run. (The test patch is searched whole: it may add the hook.)"""
    text = path.read_text(errors="replace") if path.is_file() and not path.is_symlink() else ""
    return "def load_tests(" in text or "def load_tests(" in test_patch


def _after(words: list[str], program: str) -> list[str]:
    """The arguments after the program's word (not environment settings or an interpreter)."""
    index = next(i for i, word in enumerate(words) if word.endswith(program))
    return words[index + 1 :]


def _test_command(script: str) -> list[list[str]] | None:
    """The words of each line between the script's start and end markers."""
    lines = script.split("\n")
    starts = [i for i, line in enumerate(lines) if START_MARKER in line]
    ends = [i for i, line in enumerate(lines) if END_MARKER in line]
    if not starts or not ends or ends[-1] <= starts[0]:
        return None
    found = []
    for line in lines[starts[0] + 1 : ends[-1]]:
        try:
            found.append(shlex.split(line, comments=True))
        except ValueError:
            continue  # a quoted heredoc or the like: not a runner's command line
    return found


def write(found: Plan, context: str) -> tuple[RunnerCanaries, str]:
    """Fresh canaries for `found.test_file` and their code, to append to it; named unlike
    anything in `context` (the file's text and the test patch)."""
    a, b, c = operands()
    if found.runner == "sympy":
        must_fail, must_pass = fresh_names(context, 2)
        code = (
            f"\n\ndef {must_fail}():\n    assert {a} * {b} == {a * b + c}\n"
            f"\n\ndef {must_pass}():\n    assert {a} + {c} == {a + c}\n"
        )
        return RunnerCanaries("sympy", found.test_file, must_fail, must_pass), code
    must_fail, must_pass, case_name = fresh_names(context, 3)
    case = "".join(word.title() for word in case_name.split("_")[1:]) + "Tests"
    while case in context:
        case = "Other" + case
    # A module of its own name for unittest: the test module may bind `unittest` to anything.
    code = (
        f"\n\nfrom unittest import TestCase as {case}Base\n\n\nclass {case}({case}Base):\n"
        f"    def {must_fail}(self):\n        self.assertEqual({a} * {b}, {a * b + c})\n\n"
        f"    def {must_pass}(self):\n        self.assertEqual({a} + {c}, {a + c})\n"
    )
    return RunnerCanaries("django", found.test_file, must_fail, must_pass, case=case, label=found.label), code


def note(found: Plan) -> str:
    """What the grading reason says about the guard of a Django or sympy run."""
    runner = "Django's runtests.py" if found.runner == "django" else "sympy's bin/test"
    return f"run by {runner}: guarded by canaries in {found.test_file} and checks of its log (no twins)"


def evidence(
    canaries: RunnerCanaries, statuses: Mapping[str, TestStatus], exit_code: int | None, log: str, runs: int
) -> tuple[str | None, str | None]:
    """(tampered, untrusted) for the run of a Django or sympy test command: why it shows
    tampering, or else why its passes are not to be believed; None for each when neither."""
    wrong = canaries.check(statuses, log)
    if wrong is not None:
        return wrong, None
    ran = any(canaries.names(test, canaries.must_fail) for test in statuses)
    if exit_code == 0 and ran:
        return f"the test command exited 0, although the must-fail canary {canaries.must_fail} ran", None
    forged = forged_output(canaries.runner, log, exit_code, runs)
    if forged is not None:
        return forged, None
    return None, credited_passes(log) if canaries.runner == "django" else None
