"""SWE-bench instances as Clade tasks: the instance fields, plus the image the task runs in."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from benchmarks.base import Task
from benchmarks.swebench.harness import (
    REPO_DIRECTORY,
    TESTBED_BIN,
    Harness,
    InstanceFormat,
    UnsupportedInstance,
)
from benchmarks.swebench.live import as_v5_row, is_live_row

EVAL_DIR = "/clade/eval"
EVAL_SCRIPT = f"{EVAL_DIR}/eval.sh"
REQUIRED = (
    "instance_id",
    "repo",
    "base_commit",
    "problem_statement",
    "patch",
    "test_patch",
    "FAIL_TO_PASS",
    "PASS_TO_PASS",
)
_TEXT = (
    "hints_text",
    "created_at",
    "version",
    "environment_setup_commit",
    "image",
    "eval_script",
    "log_parser",
    "eval_type",
)


class SWEbenchTask(Task):
    """A SWE-bench instance. The agent works in `image`, with the repository at /testbed."""

    image: str
    instance_format: InstanceFormat
    environment_setup_commit: str = ""
    # swebench 5.x instances only; 4.x ones take these from the harness.
    eval_script: str = ""
    log_parser: str = ""
    eval_type: str = ""

    def instance(self) -> dict[str, Any]:
        """The instance as the swebench package reads it."""
        fields = [*REQUIRED, "hints_text", "created_at", "version", "environment_setup_commit"]
        if self.instance_format == "swebench-5":
            fields += ["image", "eval_script", "log_parser", "eval_type"]
        return {name: getattr(self, name) for name in fields}


def to_task(row: Mapping[str, Any], harness: Harness, *, namespace: str | None = None) -> SWEbenchTask:
    """Check one dataset row against the installed harness and make it a task.

    Columns Clade does not use are ignored; a row that lacks a required one, or that the
    installed swebench cannot grade, raises `UnsupportedInstance` naming the instance.
    """
    instance_id = str(row.get("instance_id") or "?")
    if is_live_row(row):  # SWE-bench-Live: per-row test commands and parser (live.py)
        row = as_v5_row(row, harness)
    missing = [name for name in REQUIRED if row.get(name) is None]
    if missing:
        raise UnsupportedInstance(f"{instance_id}: not a SWE-bench instance: no {', '.join(missing)}")
    instance = {name: row[name] for name in REQUIRED}
    for name in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        if isinstance(instance[name], str):  # datasets store them JSON-encoded
            try:
                instance[name] = json.loads(instance[name])
            except json.JSONDecodeError as exc:
                raise UnsupportedInstance(f"{instance_id}: {name} is not a JSON list: {exc}") from exc
            except RecursionError as exc:  # the decoder recurses per `[`: a traceback otherwise
                why = f"{instance_id}: {name} is not a JSON list: nested too deep"
                raise UnsupportedInstance(why) from exc
    for name in _TEXT:
        if row.get(name) is not None:
            instance[name] = str(row[name])  # parquet may hold dates and numbers here
    instance.setdefault("version", "")
    if row.get("image_assets"):
        instance["image_assets"] = row["image_assets"]
    image = harness.image(instance, harness.test_spec(instance, namespace))
    fields = {key: value for key, value in instance.items() if key not in ("image", "image_assets")}
    try:
        return SWEbenchTask(
            **fields,
            image=image,
            instance_format=harness.instance_format,
            test_command=["bash", EVAL_SCRIPT],
            repo_path=REPO_DIRECTORY,
            # The agent's commands find the repository's python and test runner first, as the
            # eval script does after `conda activate testbed`; a missing folder costs nothing.
            tools_path=[TESTBED_BIN],
        )
    except ValidationError as exc:
        raise UnsupportedInstance(f"{instance_id}: {_first_error(exc)}") from exc


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}"
