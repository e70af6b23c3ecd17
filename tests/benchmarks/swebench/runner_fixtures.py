"""SWE-bench fixture instances that pytest does not run: one laid out like Django, one like sympy.

  fixtures/.repos/tinyweb/   a Django layout: `tests/runtests.py` (unittest at verbosity 2, through
                             `tinyweb/test/runner.py`, as Django's runs through django/test/runner.py)
  fixtures/.repos/tinysym/   a sympy layout: `bin/test` through `tinysym/testing/runtests.py`, which
                             prints one "test_x ok" / "test_x F" line a test and sympy's summary

`runner_rows` writes their swebench 5.x rows: an eval script in the harness's style whose test
command is the runner's (`./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1
slugs.tests`, `bin/test -C --verbose tinysym/tests/test_numbers.py`) and swebench's own parser
for it (`parse_log_django`, `parse_log_sympy`). The runners are Clade's own small code: neither
Django nor sympy is installed in the images.
"""

from __future__ import annotations

import json
from typing import Any

from benchmarks.swebench.patches import touched_paths
from tests.benchmarks.swebench.fixture_set import HEREDOC, IMAGE_REPOSITORY, instances

RUNNER_NAMES = ("tinyweb-1", "tinysym-1")
RUNNER_REPOS = ("tinyweb", "tinysym")
DJANGO, SYMPY = "clade-fixtures__tinyweb-1", "clade-fixtures__tinysym-1"
_COMMANDS = {
    "tinyweb": (
        "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 {labels}",
        "parse_log_django",
    ),
    "tinysym": (
        "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C --verbose {files}",
        "parse_log_sympy",
    ),
}


def test_command(repo_name: str, test_patch: str) -> str:
    """The runner's command for the test patch's files, as the harness derives it."""
    files = touched_paths(test_patch)
    # Django's labels: tests/a/b.py -> a.b
    labels = [path.removeprefix("tests/").removesuffix(".py").replace("/", ".") for path in files]
    return _COMMANDS[repo_name][0].format(labels=" ".join(labels), files=" ".join(files))


def eval_script(repo_name: str, base_commit: str, test_patch: str) -> str:
    files = " ".join(touched_paths(test_patch))
    lines = [
        "#!/bin/bash",
        "set -uxo pipefail",
        "cd /testbed",
        "git config --global --add safe.directory /testbed",
        "git status",
        f"git -c core.fileMode=false diff {base_commit}",
        f"git checkout {base_commit} {files}",
        f"git apply -v - <<'{HEREDOC}'\n{test_patch}\n{HEREDOC}",
        ": '>>>>> Start Test Output'",
        test_command(repo_name, test_patch),
        ": '>>>>> End Test Output'",
        f"git checkout {base_commit} {files}",
    ]
    return "\n".join(lines) + "\n"


def runner_rows(commits: dict[str, str], images: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """swebench 5.x rows of the runner instances; `images`: repo name -> image."""
    rows = []
    for instance in instances(RUNNER_NAMES):
        name, base = instance.repo_name, commits[instance.repo_name]
        rows.append(
            {
                **instance.meta,
                "base_commit": base,
                "environment_setup_commit": base,
                "problem_statement": instance.statement,
                "hints_text": "",
                "patch": instance.gold,
                "test_patch": instance.tests,
                "FAIL_TO_PASS": json.dumps(instance.meta["FAIL_TO_PASS"]),
                "PASS_TO_PASS": json.dumps(instance.meta["PASS_TO_PASS"]),
                "image": (images or {}).get(name, f"{IMAGE_REPOSITORY}-{name}:unbuilt"),
                "eval_script": eval_script(name, base, instance.tests),
                "log_parser": _COMMANDS[name][1],
                "eval_type": "pass_and_fail",
            }
        )
    return rows
