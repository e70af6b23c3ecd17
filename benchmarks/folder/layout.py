"""Reading a benchmark folder (the layout is in docs/own-benchmark.md).

Every problem is a `FolderLayoutError` that names the file at fault: a missing task.json
or statement.md, JSON that does not parse, a field that is missing or unknown, a
repository that is not there, a base commit that does not match. The folder may be
hostile: nothing outside it is read through a symbolic link, and only regular files of a
bounded size are read (benchmarks/userfiles.py).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from benchmarks.base import DEFAULT_REPO_PATH, BenchmarkError, Task
from benchmarks.gitops import GitError, TooLargeToCopy, make_repo
from benchmarks.userfiles import UserFileError, inside, name_problem, parse_json, read_text

SUITE_FILE = "suite.json"
TASKS_DIR = "tasks"
TASK_FILE = "task.json"
STATEMENT_FILE = "statement.md"
GOLD_FILE = "gold.patch"
TEST_PATCH_FILE = "test.patch"
EVALUATOR_DIR = "evaluator"
# `repos/` first; `.repos/` as clade-mini has it (a dot folder keeps pytest and mypy out).
REPO_DIRS = ("repos", ".repos")
# The test the verdict of an evaluator task is reported as, unless task.json names others.
EVALUATOR_TEST = "evaluator"

Mode = Literal["pytest", "evaluator"]
M = TypeVar("M", bound=BaseModel)


class FolderLayoutError(BenchmarkError, ValueError):
    """The folder is malformed; `path` is the file (or folder) at fault."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


class TaskFile(BaseModel):
    """tasks/<id>/task.json."""

    model_config = ConfigDict(extra="forbid")

    instance_id: str | None = Field(default=None, min_length=1)  # default: the folder's name
    repo: str = Field(min_length=1)  # a folder under repos/ ("owner/name": its last part)
    base_commit: str | None = None  # checked when given; computed from repos/<repo>/ otherwise
    FAIL_TO_PASS: list[str] = Field(default_factory=list)
    PASS_TO_PASS: list[str] = Field(default_factory=list)
    # A program and its arguments: the program's name cannot be empty (`[""]` runs nothing).
    test_command: list[str] | None = Field(default=None, min_length=1)  # pytest mode
    evaluator: list[str] | None = Field(default=None, min_length=1)  # evaluator mode
    hints_text: str = ""
    created_at: str = ""
    version: str = ""
    image: str | None = None
    repo_path: str = DEFAULT_REPO_PATH

    @field_validator("test_command", "evaluator")
    @classmethod
    def _names_a_program(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and not value[0].strip():
            raise ValueError("the first item, the program to run, is empty")
        return value

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _decode_json_list(cls, value: object) -> object:
        # As in SWE-bench datasets, a JSON-encoded list is accepted.
        try:
            return json.loads(value) if isinstance(value, str) else value
        except RecursionError as exc:  # the decoder recurses per `[`: a traceback otherwise
            raise ValueError("a JSON-encoded list nested too deep") from exc

    @field_validator("instance_id")
    @classmethod
    def _printable_id(cls, value: str | None) -> str | None:
        problem = None if value is None else name_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("repo_path")
    @classmethod
    def _absolute_repo_path(cls, value: str) -> str:
        # Where the repository is mounted in the sandbox: a relative path has no meaning there.
        path = PurePosixPath(value)
        if not path.is_absolute() or ".." in path.parts:
            raise ValueError(f"{value!r} is not an absolute path without '..'")
        return value

    @model_validator(mode="after")
    def _one_mode(self) -> TaskFile:
        if (self.test_command is None) == (self.evaluator is None):
            raise ValueError("give exactly one of test_command (pytest) and evaluator (a command)")
        if self.test_command is not None and not self.FAIL_TO_PASS:
            raise ValueError("a pytest task needs FAIL_TO_PASS: the tests the fix makes pass")
        return self

    @property
    def mode(self) -> Mode:
        return "pytest" if self.test_command is not None else "evaluator"


class SuiteFile(BaseModel):
    """suite.json (optional): the task ids in order, and named subsets."""

    model_config = ConfigDict(extra="forbid")

    tasks: list[str] = Field(min_length=1)
    subsets: dict[str, list[str]] = Field(default_factory=dict)

    @field_validator("tasks")
    @classmethod
    def _printable_ids(cls, value: list[str]) -> list[str]:
        for task_id in value:
            problem = name_problem(task_id)
            if problem is not None:
                raise ValueError(problem)
        return value

    @field_validator("subsets")
    @classmethod
    def _subset_names(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for name in value:
            problem = name_problem(name)
            if problem is not None:
                raise ValueError(f"subset name {problem}")
            if name == "all":
                # Every task, always: a subset of that name would silently stand in for it.
                raise ValueError("'all' is every task, always; give the subset another name")
        return value


@dataclass(frozen=True)
class FolderTask:
    task: Task
    mode: Mode
    repo_dir: Path  # the repository's base state
    evaluator_dir: Path | None  # tasks/<id>/evaluator/, mounted read-only when grading


@dataclass(frozen=True)
class Folder:
    tasks: list[FolderTask]
    subsets: dict[str, list[str]]


def base_message(repo: str) -> str:
    """The message of the base commit; with the fixed identity and date it fixes the sha."""
    return f"{repo}: base state"


def load_folder(root: Path) -> Folder:
    """Every task of the benchmark at `root`, checked; raises `FolderLayoutError`."""
    tasks_dir = root / TASKS_DIR
    if not tasks_dir.is_dir():
        raise FolderLayoutError(tasks_dir, "missing: a benchmark folder holds tasks/<id>/task.json")
    _inside(root, tasks_dir)
    suite_path = root / SUITE_FILE
    # A link counts as there even when it leads nowhere: reading it says where it leads.
    listed = suite_path.exists() or suite_path.is_symlink()
    suite = _read_model(root, suite_path, SuiteFile, in_task=False) if listed else None
    if suite is None:
        folders = sorted(p for p in tasks_dir.iterdir() if p.is_dir() and not p.name.startswith("."))
        if not folders:
            raise FolderLayoutError(tasks_dir, "no task folders")
        for folder in folders:
            problem = name_problem(folder.name)
            if problem is not None:
                raise FolderLayoutError(tasks_dir, f"task folder {problem}")
        wanted = [(folder.name, folder) for folder in folders]
    else:
        wanted = [(task_id, _task_folder(tasks_dir, task_id, suite_path)) for task_id in suite.tasks]
    for _, folder in wanted:
        # A plain child of the checked tasks/ is inside unless it is a link. Checked once here:
        # each file of the folder is then read without resolving its whole path.
        if folder.is_symlink():
            _inside(root, folder)
    repos: dict[str, tuple[Path, str]] = {}
    loaded: list[FolderTask] = []
    seen: dict[str, Path] = {}
    for listed_id, folder in wanted:
        entry = _load_task(root, folder, listed_id if suite is not None else None, repos)
        instance_id = entry.task.instance_id
        if instance_id in seen:
            raise FolderLayoutError(folder / TASK_FILE, f"instance id {instance_id!r} is used twice")
        seen[instance_id] = folder
        loaded.append(entry)
    ids = [entry.task.instance_id for entry in loaded]
    subsets = {"all": ids}
    for name, members in (suite.subsets if suite is not None else {}).items():
        unknown = [member for member in members if member not in seen]
        if unknown:
            # The first few: a subset of 100,000 wrong names stays a readable line.
            more = f" and {len(unknown) - 10} more" if len(unknown) > 10 else ""
            first = ", ".join(unknown[:10])
            raise FolderLayoutError(suite_path, f"subset {name!r} names unknown tasks: {first}{more}")
        subsets[name] = list(members)
    return Folder(loaded, subsets)


def _task_folder(tasks_dir: Path, instance_id: str, suite_path: Path) -> Path:
    # clade-mini's ids carry a prefix ("clade-mini__textkit-1") that its folders do not.
    for name in dict.fromkeys([instance_id, instance_id.rsplit("__", 1)[-1]]):
        if _plain_name(name) and (tasks_dir / name).is_dir():
            return tasks_dir / name
    raise FolderLayoutError(suite_path, f"task {instance_id!r} has no folder {tasks_dir / instance_id}")


def _load_task(
    root: Path, folder: Path, listed_id: str | None, repos: dict[str, tuple[Path, str]]
) -> FolderTask:
    task_path = folder / TASK_FILE
    fields = _read_model(root, task_path, TaskFile)
    instance_id = fields.instance_id or listed_id or folder.name
    if listed_id is not None and instance_id != listed_id:
        raise FolderLayoutError(task_path, f"instance_id {instance_id!r}, but suite.json lists {listed_id!r}")
    if fields.repo not in repos:  # found, checked and committed once per repository
        repo_dir = _repo_dir(root, fields.repo, task_path)
        repos[fields.repo] = (repo_dir, _base_commit(repo_dir, fields.repo))
    repo_dir, base_commit = repos[fields.repo]
    if fields.base_commit is not None and fields.base_commit != base_commit:
        raise FolderLayoutError(
            task_path,
            f"base_commit {fields.base_commit} does not match {repo_dir} (its base commit is "
            f"{base_commit}); update it, or leave it out and Clade computes it",
        )
    statement = _read_text(root, folder / STATEMENT_FILE, required=True)
    if not statement.strip():
        raise FolderLayoutError(folder / STATEMENT_FILE, "is empty: it is the issue the agent sees")
    evaluator_dir = folder / EVALUATOR_DIR
    if evaluator_dir.is_dir():
        # It is mounted into the sandbox: a link to a host folder would show that folder there.
        _inside(root, evaluator_dir)
    command = fields.test_command if fields.mode == "pytest" else fields.evaluator
    assert command is not None  # TaskFile checked that exactly one is given
    try:
        task = Task(
            instance_id=instance_id,
            repo=fields.repo,
            base_commit=base_commit,
            problem_statement=statement,
            patch=_read_text(root, folder / GOLD_FILE, required=False),
            test_patch=_read_text(root, folder / TEST_PATCH_FILE, required=False),
            FAIL_TO_PASS=fields.FAIL_TO_PASS or [EVALUATOR_TEST],
            PASS_TO_PASS=fields.PASS_TO_PASS,
            hints_text=fields.hints_text,
            created_at=fields.created_at,
            version=fields.version,
            test_command=command,
            repo_path=fields.repo_path,
            image=fields.image,
        )
    except ValidationError as exc:
        raise FolderLayoutError(task_path, _describe(exc)) from exc
    return FolderTask(
        task=task,
        mode=fields.mode,
        repo_dir=repo_dir,
        evaluator_dir=evaluator_dir if evaluator_dir.is_dir() else None,
    )


def _repo_dir(root: Path, repo: str, task_path: Path) -> Path:
    name = repo.rstrip("/").rsplit("/", 1)[-1]
    if not _plain_name(name):
        raise FolderLayoutError(task_path, f"repo {repo!r} is not a folder name")
    for parent in REPO_DIRS:
        if (root / parent / name).is_dir():
            # Its files are copied into the agent's repository: a link must not bring in the host's.
            return _inside(root, root / parent / name)
    raise FolderLayoutError(task_path, f"repo {repo!r}: no folder {root / REPO_DIRS[0] / name}")


def _base_commit(repo_dir: Path, repo: str) -> str:
    with tempfile.TemporaryDirectory(prefix="clade-folder-") as tmp:
        try:
            return make_repo(repo_dir, Path(tmp) / "repo", base_message(repo))
        except TooLargeToCopy as exc:
            raise FolderLayoutError(exc.path, exc.reason) from exc
        except shutil.Error as exc:
            # copytree gathers (source, destination, why) for each file it could not copy.
            source, _, why = exc.args[0][0]
            raise FolderLayoutError(Path(source), f"cannot be copied into the repository: {why}") from exc
        except (GitError, OSError) as exc:
            raise FolderLayoutError(repo_dir, f"cannot make a git repository of it: {exc}") from exc


def _read_model(root: Path, path: Path, model: type[M], *, in_task: bool = True) -> M:
    text = _read_text(root, path, required=True, in_task=in_task)
    try:
        data = parse_json(text, path)
    except UserFileError as exc:
        raise FolderLayoutError(path, exc.reason) from exc
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise FolderLayoutError(path, _describe(exc)) from exc


def _read_text(root: Path, path: Path, *, required: bool, in_task: bool = True) -> str:
    try:
        # in_task: a file of a task folder, which load_folder checked is inside root.
        return read_text(root, path, parent_checked=in_task)
    except FileNotFoundError as exc:
        if not required:
            return ""
        raise FolderLayoutError(path, "missing") from exc
    except UserFileError as exc:
        raise FolderLayoutError(path, exc.reason) from exc


def _inside(root: Path, path: Path) -> Path:
    try:
        return inside(root, path)
    except UserFileError as exc:
        raise FolderLayoutError(path, exc.reason) from exc


def _describe(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"])
        message = "unknown field" if error["type"] == "extra_forbidden" else error["msg"]
        message = message.removeprefix("Value error, ")  # pydantic's prefix to our own refusals
        problems.append(f"{where}: {message}" if where else message)
    return "; ".join(problems)


def _plain_name(name: str) -> bool:
    return bool(name) and not name.startswith(".") and "/" not in name and "\\" not in name
