"""The test command's exit status, read from the eval script's log rather than the script's own
status (which is that of the `git checkout` it ends with)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from benchmarks.swebench import grading
from benchmarks.swebench.grading import EXIT_MARKER, with_exit_marker

# The shape of the harness's eval scripts: markers around the test command, then a reset.
SCRIPT = """#!/bin/bash
set -uxo pipefail
: '>>>>> Start Test Output'
sh -c 'echo running the tests; exit 3'
: '>>>>> End Test Output'
true
"""


def run(script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "eval.sh"
    path.write_text(script)
    return subprocess.run(["bash", str(path)], capture_output=True, text=True, check=False)


def test_the_marker_carries_the_test_commands_status(tmp_path: Path) -> None:
    plain = run(SCRIPT, tmp_path)
    assert plain.returncode == 0 and grading.tests_exit_code(plain.stdout + plain.stderr) is None
    marked = run(with_exit_marker(SCRIPT), tmp_path)
    assert marked.returncode == 0  # still the reset's status
    assert grading.tests_exit_code(marked.stdout + marked.stderr) == 3
    assert f"{EXIT_MARKER}: 3" in marked.stdout


def test_a_script_that_prints_the_marker_itself_is_left_alone() -> None:
    script = SCRIPT.replace("true\n", f'echo "{EXIT_MARKER}: $X"\n')
    assert with_exit_marker(script) == script
    assert with_exit_marker("echo no markers here\n") == "echo no markers here\n"


def test_the_last_marker_line_counts() -> None:
    # A test that prints a fake marker runs before the script's own line.
    assert grading.tests_exit_code(f"{EXIT_MARKER}: 0\nFAILED\n{EXIT_MARKER}: 1\n") == 1
    assert grading.tests_exit_code(f"x {EXIT_MARKER}: 0\n") is None


def test_status_lines_pytest_did_not_print_are_forged() -> None:
    def log(*lines: str) -> str:
        return "\n".join([f"+ : '{grading.START_MARKER}'", *lines, f"+ : '{grading.END_MARKER}'"])

    start, final = "===== test session starts =====", "===== 1 failed, 1 passed in 0.12s ====="
    honest = log(start, "PASSED t.py::a", "ERROR t.py::a - teardown", "FAILED t.py::b - assert", final)
    assert grading.forged_status_lines(honest) is None
    late = log(start, "FAILED t.py::b - assert", final, "PASSED t.py::b")
    assert grading.forged_status_lines(late) == "status lines after pytest's final summary: 'PASSED t.py::b'"
    both = log(start, "FAILED t.py::b - assert", "PASSED t.py::b")  # the final line was never printed
    assert grading.forged_status_lines(both) == "the log reports t.py::b both FAILED and PASSED"
    # Two pytest sessions in one test command: each is judged on its own.
    two = log(start, "FAILED t.py::b - x", final, start, "PASSED t.py::b", "===== 1 passed in 0.1s =====")
    assert grading.forged_status_lines(two) is None
