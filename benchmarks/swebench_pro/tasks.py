"""SWE-bench Pro rows as Clade tasks: the row's fields, its image, its run script and parser.

A row (the published dataset's columns) names its tests in `fail_to_pass`, `pass_to_pass`
and `selected_test_files_to_run`, as JSON or as Python list literals (the dataset stores
them as text); they are read as data (`ast.literal_eval`), never evaluated. The run script
and the parser are not in the row: they live in a folder in the published layout,
`<scripts>/<instance_id>/run_script.sh` and `parser.py`, and are read when the rows load,
so a task carries everything its grading needs. An instance id is a folder's name there, so
one with `/`, `..` or a control character is refused, and the scripts are read only as
regular files under `<scripts>`, never through a link out of it (benchmarks/userfiles.py).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from benchmarks.base import BenchmarkError, Task
from benchmarks.userfiles import UserFileError, name_problem, read_text

REPO_PATH = "/app"  # where Pro's images hold the repository
SCRIPTS_DIR = "/clade/pro"  # the grading sandbox's read-only folder of scripts
RUN_SCRIPT = "run_script.sh"
PARSER = "parser.py"
MAX_SCRIPT_BYTES = 1_000_000
TAG_LIMIT = 128  # the engine's limit on an image tag
REQUIRED = ("instance_id", "repo", "base_commit", "problem_statement", "patch", "test_patch")


class UnsupportedRow(BenchmarkError, ValueError):
    """A row is not a SWE-bench Pro instance Clade can grade; the message names the row and field."""


class SWEbenchProTask(Task):
    """A SWE-bench Pro instance. The agent works in `image`, with the repository at /app."""

    image: str
    repo_language: str = ""
    selected_test_files_to_run: list[str]
    before_repo_set_cmd: str = ""
    requirements: str = ""
    interface: str = ""
    run_script: str  # the instance's run_script.sh
    parser: str  # the instance's parser.py: data from the dataset, run only inside a sandbox


def to_task(row: Mapping[str, Any], scripts: Path, *, image_repository: str) -> SWEbenchProTask:
    """One row as a task, its run script and parser read from `scripts/<instance_id>/`."""
    iid = str(row.get("instance_id") or "?")
    missing = [name for name in REQUIRED if not isinstance(row.get(name), str) or not row.get(name)]
    if missing:
        raise UnsupportedRow(f"{iid}: not a SWE-bench Pro row: no {', '.join(missing)}")
    # It names the row's folder of scripts: "../x" or "/etc" would read from anywhere.
    problem = name_problem(iid)
    if problem is not None:
        raise UnsupportedRow(f"instance_id {problem}")
    if iid in (".", "..") or "/" in iid or "\\" in iid:
        raise UnsupportedRow(f"instance_id {iid!r} is not a folder name under the scripts folder")
    fail_to_pass = text_list(_either(row, "fail_to_pass", "FAIL_TO_PASS"), "fail_to_pass", iid)
    pass_to_pass = text_list(_either(row, "pass_to_pass", "PASS_TO_PASS"), "pass_to_pass", iid)
    if not fail_to_pass and not pass_to_pass:
        raise UnsupportedRow(f"{iid}: fail_to_pass and pass_to_pass are both empty: nothing to grade")
    selected = text_list(row.get("selected_test_files_to_run"), "selected_test_files_to_run", iid)
    folder = scripts / iid
    try:
        return SWEbenchProTask(
            instance_id=iid,
            repo=str(row["repo"]),
            base_commit=str(row["base_commit"]),
            problem_statement=statement(row),
            patch=str(row["patch"]),
            test_patch=str(row["test_patch"]),
            FAIL_TO_PASS=fail_to_pass,
            PASS_TO_PASS=pass_to_pass,
            created_at=str(row.get("created_at") or ""),
            image=image_name(row, image_repository),
            repo_language=str(row.get("repo_language") or ""),
            selected_test_files_to_run=selected,
            before_repo_set_cmd=str(row.get("before_repo_set_cmd") or ""),
            requirements=str(row.get("requirements") or ""),
            interface=str(row.get("interface") or ""),
            run_script=read_script(folder / RUN_SCRIPT, iid, scripts),
            parser=read_script(folder / PARSER, iid, scripts),
            test_command=["bash", f"{SCRIPTS_DIR}/{RUN_SCRIPT}"],
            repo_path=REPO_PATH,
        )
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise UnsupportedRow(f"{iid}: {where}: {error['msg']}") from exc


def statement(row: Mapping[str, Any]) -> str:
    """What the agent reads: the issue, then the row's requirements and new interfaces (the
    three parts SWE-bench Pro gives its agents)."""
    parts = [str(row["problem_statement"]).rstrip()]
    for title, name in (("Requirements", "requirements"), ("New interfaces introduced", "interface")):
        text = str(row.get(name) or "").strip()
        if text:
            parts.append(f"{title}:\n{text}")
    return "\n\n".join(parts) + "\n"


def image_name(row: Mapping[str, Any], repository: str) -> str:
    """`<repository>:<dockerhub_tag>`; a row without the tag gets the one Pro's upload derives:
    `<owner>.<name>-<instance id without "instance_" and "-vnan">`, lower-case repo, cut at 128."""
    tag = str(row.get("dockerhub_tag") or "")
    if not tag:
        owner, _, name = str(row["repo"]).lower().partition("/")
        rest = str(row["instance_id"]).removeprefix("instance_").removesuffix("-vnan")
        tag = f"{owner}.{name}-{rest}"[:TAG_LIMIT]
    return f"{repository}:{tag}"


def text_list(value: object, field: str, iid: str) -> list[str]:
    """A list of strings, from a list or from its text (JSON, or a Python list literal)."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        text = value
        try:
            value = json.loads(text)
        except RecursionError as exc:  # the decoder recurses per `[`: a traceback otherwise
            raise UnsupportedRow(f"{iid}: {field} is not a list: nested too deep") from exc
        except json.JSONDecodeError:
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError) as exc:
                raise UnsupportedRow(f"{iid}: {field} is not a list: {exc}") from exc
    if not isinstance(value, list | tuple) or not all(isinstance(item, str) for item in value):
        raise UnsupportedRow(f"{iid}: {field} is not a list of strings")
    return list(value)


def read_script(path: Path, iid: str, scripts: Path) -> str:
    try:
        return read_text(scripts, path, max_bytes=MAX_SCRIPT_BYTES)
    except FileNotFoundError:
        raise UnsupportedRow(
            f"{iid}: no {path.name} at {path} (the `scripts` folder's layout is "
            f"<scripts>/<instance_id>/{RUN_SCRIPT} and {PARSER})"
        ) from None
    except UserFileError as exc:
        raise UnsupportedRow(f"{iid}: {exc}") from exc


def _either(row: Mapping[str, Any], *names: str) -> object:
    for name in names:
        if row.get(name) is not None:
            return row[name]
    return None
