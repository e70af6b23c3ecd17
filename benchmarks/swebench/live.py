"""SWE-bench-Live rows, made the swebench 5.x instances that grade them.

SWE-bench-Live keeps SWE-bench's row format and adds, per row, the commands that run its
tests (`test_cmds`, a list; the multi-language sets also `rebuild_cmds` and `print_cmds`),
a log parser by name (`log_parser`, "pytest" for the Python set) and, in later releases, the
instance image (`docker_image`; else `starryzhang/sweb.eval.x86_64.<id, __ as _1776_>`). Its
harness (a fork of swebench) builds the eval script from those commands as swebench's
"common" one: reset the test files, apply the test patch, (rebuild), run the commands
between the markers, reset the test files again. Clade writes that script itself and hands
swebench 5.x an instance that names it, its image and the parser, so a verdict is the one
swebench's `get_eval_report` reaches on the same log.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from benchmarks.diffs import split_files
from benchmarks.swebench.harness import REPO_DIRECTORY, Harness, UnsupportedInstance

LIVE_NAMESPACE = "starryzhang"
# Live's parser names -> swebench 5.x's PARSER_REGISTRY names.
LIVE_PARSERS = {"pytest": "parse_log_pytest"}
HEREDOC = "EOF_CLADE_LIVE_TEST_PATCH"
START_MARKER = ">>>>> Start Test Output"
END_MARKER = ">>>>> End Test Output"


def is_live_row(row: Mapping[str, Any]) -> bool:
    """A SWE-bench-Live row: it names its test commands and no eval script."""
    return bool(row.get("test_cmds")) and not row.get("eval_script")


def live_image(row: Mapping[str, Any]) -> str:
    if row.get("docker_image"):
        return str(row["docker_image"])
    name = str(row["instance_id"]).replace("__", "_1776_").lower()
    return f"{LIVE_NAMESPACE}/sweb.eval.x86_64.{name}:latest"


def as_v5_row(row: Mapping[str, Any], harness: Harness) -> dict[str, Any]:
    """The Live row as a swebench 5.x instance (`image`, `eval_script`, `log_parser`,
    `eval_type`), or `UnsupportedInstance` saying why it cannot be graded here."""
    iid = str(row.get("instance_id") or "?")
    if harness.major != 5:
        raise UnsupportedInstance(
            f"{iid}: a SWE-bench-Live row (test_cmds); Clade grades these with swebench>=5,<6 "
            f"(installed: {harness.version})"
        )
    parser = str(row.get("log_parser") or row.get("parser") or "pytest").strip().lower()
    if parser not in LIVE_PARSERS:
        raise UnsupportedInstance(
            f"{iid}: log_parser {parser!r} of a SWE-bench-Live row is not supported "
            f"(known: {', '.join(LIVE_PARSERS)})"
        )
    converted = {key: value for key, value in row.items() if key not in ("log_parser", "parser")}
    converted |= {
        "image": live_image(row),
        "eval_script": eval_script(row),
        "log_parser": LIVE_PARSERS[parser],
        "eval_type": "pass_and_fail",
    }
    return converted


def eval_script(row: Mapping[str, Any]) -> str:
    """The eval script Live's harness runs for `row`, in Clade's words."""
    base, test_patch = str(row["base_commit"]), str(row["test_patch"])
    existing = [part.paths[0] for part in split_files(test_patch) if "--- /dev/null" not in part.text]
    reset = f"git checkout {base} {' '.join(existing)}" if existing else ": no test files to reset"
    lines = [
        "#!/bin/bash",
        "set -uxo pipefail",
        f"cd {REPO_DIRECTORY}",
        reset,
        f"git apply --verbose --reject - <<'{HEREDOC}'\n{test_patch}\n{HEREDOC}",
        *commands(row, "rebuild_cmds"),
        f": '{START_MARKER}'",
        *commands(row, "test_cmds"),
        *commands(row, "print_cmds"),
        f": '{END_MARKER}'",
        reset,
    ]
    return "\n".join(lines) + "\n"


def commands(row: Mapping[str, Any], field: str) -> list[str]:
    value = row.get(field) or []
    if isinstance(value, str):  # a JSON list in some exports, else one command
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise UnsupportedInstance(f"{row.get('instance_id', '?')}: {field} is not a list of commands")
    return list(value)
