"""Reading the Aider polyglot layout: exercises, their statements, repositories and gold patches.

<root>/<language>/exercises/practice/<exercise>/
    .docs/instructions.md            the statement (after .docs/introduction.md if any)
    .docs/instructions.append.md     optional, appended to it
    .meta/config.json                files.solution, files.test, files.example
    .meta/<example solution>         never shown to the agent
    <stub solution files>, <test files>, <build files>

A layout handed to Clade may be hostile: an exercise folder that links out of `root`, or a
file that links out of its exercise, is refused; files are read only when regular and of a
bounded size (benchmarks/userfiles.py); the exercise's own links are copied as links.
"""

from __future__ import annotations

import os
import shutil
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchmarks.base import BrokenTask
from benchmarks.gitops import TooLargeToCopy, check_copy_size, git_ok
from benchmarks.polyglot.languages import NEVER_SOLUTION_FILES, SPECS, LanguageName
from benchmarks.userfiles import UserFileError, inside, name_problem, read_text

ID_PREFIX = "polyglot"
# Folders of an exercise the agent's repository leaves out: the statement is given
# separately, and .meta holds the example solution.
_HIDDEN_FOLDERS = frozenset({".meta", ".docs"})
_JUNK = shutil.ignore_patterns(
    ".git", "__pycache__", "*.pyc", ".pytest_cache", ".mypy_cache", ".ruff_cache", "node_modules"
)


class _Files(BaseModel):
    model_config = ConfigDict(extra="ignore")

    solution: list[str] = Field(min_length=1)
    test: list[str] = Field(min_length=1)
    example: list[str] = Field(min_length=1)


class _Config(BaseModel):
    """The part of `.meta/config.json` the benchmark reads."""

    model_config = ConfigDict(extra="ignore")

    files: _Files


@dataclass(frozen=True)
class Exercise:
    language: LanguageName
    name: str
    path: Path
    solution: tuple[str, ...]  # files the agent is asked to edit
    tests: tuple[str, ...]
    examples: tuple[tuple[str, str], ...]  # (solution file, example file that replaces it)
    # (new file, example file): the example's other files (Java's helper classes), which
    # the gold patch adds next to the solution.
    extra_examples: tuple[tuple[str, str], ...] = ()
    # Crates the example needs (`.meta/Cargo-example.toml`), added to Cargo.toml.
    extra_crates: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.language}/{self.name}"

    @property
    def instance_id(self) -> str:
        return f"{ID_PREFIX}__{self.language}__{self.name}"


def exercise_folders(root: Path, language: str) -> list[Path]:
    practice = root / language / "exercises" / "practice"
    if not practice.is_dir():
        return []
    return sorted(path for path in practice.iterdir() if path.is_dir() and not path.name.startswith("."))


def load_exercise(language: LanguageName, path: Path, root: Path | None = None) -> Exercise:
    """The exercise at `path`; BrokenTask naming it and the file at fault. `root`: the layout's
    folder, which the exercise folder must not link out of."""
    problem = name_problem(path.name)
    if problem is not None:
        raise BrokenTask(f"polyglot exercise in {path.parent}: the folder's name {problem}")
    where = f"polyglot exercise {language}/{path.name}"
    try:
        inside(path.parent if root is None else root, path)
        text = read_text(path, path / ".meta" / "config.json")
        files = _Config.model_validate_json(text).files
    except FileNotFoundError as exc:
        raise BrokenTask(f"{where}: missing .meta/config.json") from exc
    except UserFileError as exc:
        raise BrokenTask(f"{where}: {exc}") from exc
    except ValidationError as exc:
        at = f" at {_loc(exc)}" if _loc(exc) else ""
        raise BrokenTask(f"{where}: .meta/config.json: {exc.errors()[0]['msg']}{at}") from exc
    for name in [*files.solution, *files.test, *files.example, ".docs/instructions.md"]:
        _check_file(where, path, name)
    solution = tuple(name for name in files.solution if PurePosixPath(name).name not in NEVER_SOLUTION_FILES)
    if set(solution) & set(files.test):
        raise BrokenTask(f"{where}: a file is both a solution file and a test file")
    examples = pair_examples(solution, files.example)
    if not examples:
        raise BrokenTask(f"{where}: no example file matches a solution file ({', '.join(solution)})")
    extras = extra_examples(path, examples, files.example)
    crates = _example_crates(where, path) if language == "rust" else ()
    return Exercise(language, path.name, path, solution, tuple(files.test), examples, extras, crates)


def extra_examples(
    path: Path, examples: tuple[tuple[str, str], ...], listed: list[str]
) -> tuple[tuple[str, str], ...]:
    """The example files that replace no solution file, each with where the gold patch puts
    it: beside the solution file whose example shares its folder (Java's
    `.meta/src/reference/java/Frame.java` -> `src/main/java/Frame.java`). A file the
    exercise already ships there (an editor file) stays as shipped."""
    paired = {example for _, example in examples}
    folders = {
        str(PurePosixPath(example).parent): str(PurePosixPath(target).parent) for target, example in examples
    }
    extras: list[tuple[str, str]] = []
    for example in listed:
        if example in paired:
            continue
        source = PurePosixPath(example)
        folder = folders.get(str(source.parent))
        if folder is None:
            continue  # a file the example does not place (no solution file in its folder)
        target = str(PurePosixPath(folder) / source.name)
        if not (path / target).exists():
            extras.append((target, example))
    return tuple(extras)


def _example_crates(where: str, path: Path) -> tuple[str, ...]:
    example = path / ".meta" / "Cargo-example.toml"
    if not example.is_file():
        return ()
    try:
        wanted = tomllib.loads(read_text(path, example)).get("dependencies", {})
        shipped = tomllib.loads(read_text(path, path / "Cargo.toml")).get("dependencies", {})
    except (tomllib.TOMLDecodeError, OSError, UserFileError, RecursionError) as exc:
        raise BrokenTask(f"{where}: cannot read Cargo.toml or .meta/Cargo-example.toml: {exc}") from exc
    return tuple(sorted(name for name in wanted if name not in shipped))


def add_crates(cargo_toml: str, crates: tuple[str, ...]) -> str:
    """`cargo_toml` with `crates` added to [dependencies] at any version: the image's
    registry holds the one version Debian packages (the examples' older pins are not there)."""
    if not crates:
        return cargo_toml
    lines = cargo_toml.splitlines()
    added = [f'{name} = "*"' for name in crates]
    header = next((index for index, line in enumerate(lines) if line.strip() == "[dependencies]"), None)
    if header is None:
        lines += ["", "[dependencies]", *added]
    else:
        lines[header + 1 : header + 1] = added
    return "\n".join(lines) + "\n"


def pair_examples(solution: tuple[str, ...], examples: list[str]) -> tuple[tuple[str, str], ...]:
    """Which example file replaces which solution file: one of each pair up; otherwise by
    file name (java), then by suffix when only one example has it (cpp's .h and .cpp)."""
    if len(solution) == 1 and len(examples) == 1:
        return ((solution[0], examples[0]),)
    pairs: list[tuple[str, str]] = []
    left = list(examples)
    for target in solution:
        name, suffix = PurePosixPath(target).name, PurePosixPath(target).suffix
        match = [example for example in left if PurePosixPath(example).name == name]
        if not match:
            match = [example for example in left if PurePosixPath(example).suffix == suffix]
        if len(match) == 1:
            pairs.append((target, match[0]))
            left.remove(match[0])
    return tuple(pairs)


def statement(exercise: Exercise) -> str:
    docs = exercise.path / ".docs"
    # load_exercise checked instructions.md; the other two are read as carefully.
    try:
        parts = [
            read_text(exercise.path, docs / name).strip()
            for name in ("introduction.md", "instructions.md", "instructions.append.md")
            if (docs / name).exists() or (docs / name).is_symlink()
        ]
    except (OSError, UserFileError) as exc:
        raise BrokenTask(f"polyglot exercise {exercise.key}: {exc}") from exc
    solution = ", ".join(f"`{name}`" for name in exercise.solution)
    tests = ", ".join(f"`{name}`" for name in exercise.tests)
    command = SPECS[exercise.language].display_command(list(exercise.tests))
    parts.append(
        "## Your task\n\n"
        f"Solve this exercise by editing {solution} in the repository. "
        f"The tests are in {tests} and run with `{command}`; the exercise is solved when "
        "they all pass. Do not change the tests: they are put back as they were before "
        "grading. Keep the names of the existing functions, classes and files, which the "
        "tests use, and use only the language's standard library"
        + (f" and the crates {', '.join(exercise.extra_crates)}." if exercise.extra_crates else ".")
    )
    return "\n\n".join(parts) + "\n"


def build_repo(exercise: Exercise, dest: Path) -> str:
    """Write the exercise, without .meta and .docs, at `dest` (new or empty) as a git work
    tree with one commit (fixed identity and date, so the same files give the same sha)."""
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"{dest} is not empty")
    source = str(exercise.path)

    def ignore(folder: str, names: list[str]) -> set[str]:
        hidden = set(_HIDDEN_FOLDERS.intersection(names)) if folder == source else set()
        return hidden | set(_JUNK(folder, names))

    # shutil.copy keeps the executable bit (gradlew), which git records. Links are copied as
    # links: followed, one to /etc/passwd would put the host's file into the agent's repository.
    try:
        check_copy_size(exercise.path, ignore)
    except TooLargeToCopy as exc:
        raise BrokenTask(f"polyglot exercise {exercise.key}: {exc}") from exc
    try:
        shutil.copytree(
            exercise.path, dest, symlinks=True, ignore=ignore, copy_function=shutil.copy, dirs_exist_ok=True
        )
    except shutil.Error as exc:
        # copytree gathers (source, destination, why) for each file it could not copy (a FIFO).
        source, _, why = exc.args[0][0]
        raise BrokenTask(f"polyglot exercise {exercise.key}: {source} cannot be copied: {why}") from exc
    if exercise.extra_crates:
        cargo = dest / "Cargo.toml"
        cargo.write_text(add_crates(cargo.read_text(), exercise.extra_crates))
    git_ok(dest, "init", "--quiet", "--initial-branch=main")
    git_ok(dest, "add", "--all")
    git_ok(dest, "commit", "--quiet", "--no-verify", "--message", f"{ID_PREFIX}/{exercise.key}: exercise")
    return git_ok(dest, "rev-parse", "HEAD").strip()


def gold_patch(exercise: Exercise, work: Path) -> tuple[str, str]:
    """(base commit, the stub -> example diff), built in the empty folder `work`."""
    sha = build_repo(exercise, work)
    for target, example in (*exercise.examples, *exercise.extra_examples):
        (work / target).parent.mkdir(parents=True, exist_ok=True)
        (work / target).unlink(missing_ok=True)  # never write through a link the exercise shipped
        shutil.copyfile(exercise.path / example, work / target)
    git_ok(work, "add", "--all")
    return sha, git_ok(work, "diff", "--cached", "--binary")


def _check_file(where: str, folder: Path, name: str) -> None:
    relative = PurePosixPath(name)
    if relative.is_absolute() or ".." in relative.parts:
        raise BrokenTask(f"{where}: {name!r} is not a path inside the exercise")
    try:
        real = inside(folder, folder / relative)
    except UserFileError as exc:
        raise BrokenTask(f"{where}: {name}: {exc.reason}") from exc
    try:
        mode = os.stat(real).st_mode
    except OSError as exc:
        raise BrokenTask(f"{where}: missing file {name}") from exc
    if not stat.S_ISREG(mode):
        raise BrokenTask(f"{where}: {name} is not a regular file")


def _loc(exc: ValidationError) -> str:
    return ".".join(str(part) for part in exc.errors()[0]["loc"])
