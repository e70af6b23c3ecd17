"""Helpers for the polyglot tests: exercises written into a temporary layout, and agent diffs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from benchmarks import Task
from benchmarks.gitops import git_ok
from benchmarks.polyglot import Polyglot

Edit = Callable[[Path], None]  # changes files in a work tree


def write_exercise(
    root: Path,
    language: str,
    name: str,
    files: dict[str, str],
    *,
    solution: list[str],
    test: list[str],
    example: list[str],
    instructions: str = "# Instructions\n\nDo the thing.\n",
) -> Path:
    """One exercise in the Aider polyglot layout; `files` maps paths (under the exercise,
    .meta/ included) to their content."""
    folder = root / language / "exercises" / "practice" / name
    config = {"authors": ["test"], "files": {"solution": solution, "test": test, "example": example}}
    for path, content in {
        ".docs/instructions.md": instructions,
        ".meta/config.json": json.dumps(config, indent=2),
        **files,
    }.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(content)
    return folder


def write_rust_exercise(root: Path, name: str = "adder") -> Path:
    return write_exercise(
        root,
        "rust",
        name,
        {
            "Cargo.toml": f'[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2021"\n',
            "src/lib.rs": "pub fn add(a: i32, b: i32) -> i32 {\n    todo!()\n}\n",
            "tests/adder.rs": "#[test]\nfn adds() {\n    assert_eq!(adder::add(2, 3), 5);\n}\n",
            ".meta/example.rs": "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n",
        },
        solution=["src/lib.rs", "Cargo.toml"],
        test=["tests/adder.rs"],
        example=[".meta/example.rs"],
    )


def agent_diff(benchmark: Polyglot, task: Task, work: Path, *edits: Edit) -> str:
    """The `git diff` (new files included) after `edits` to the task's repository, as the
    host takes it from an agent."""
    repo = work / f"agent-{task.instance_id}-{len(list(work.glob('agent-*')))}"
    benchmark.prepare_repo(task, repo)
    for edit in edits:
        edit(repo)
    git_ok(repo, "add", "--all")
    return git_ok(repo, "diff", "--cached", "--binary")


def write(path: str, content: str) -> Edit:
    def edit(repo: Path) -> None:
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(content)

    return edit


def delete(path: str) -> Edit:
    def edit(repo: Path) -> None:
        (repo / path).unlink()

    return edit


def gold_solution(benchmark: Polyglot, task: Task) -> Edit:
    """Write the exercise's example solution over its stub, as a solving agent would."""
    exercise = benchmark.exercise(task)

    def edit(repo: Path) -> None:
        for target, example in exercise.examples:
            (repo / target).write_text((exercise.path / example).read_text())

    return edit
