"""Benchmark plugin packages written for tests: a folder that, put on sys.path (PYTHONPATH),
holds an installed distribution whose `clade.benchmarks` entry point names a benchmark,
as `pip install --target` leaves one. Nothing of Clade's own is edited to use them.

`write_wordcount_plugin` writes a complete benchmark with its own task, repository, hidden
tests and grading; `write_entry_point` writes a distribution with only an entry point (a
broken one, or a second claim on a name).
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from textwrap import dedent

WORDCOUNT = "wordcount"
WORDCOUNT_TASK = "wordcount__split-1"
STATEMENT = "count_words miscounts text with runs of spaces or line breaks"

_BUGGY = '''\
def count_words(text: str) -> int:
    """How many words `text` holds."""
    return len(text.split(" ")) if text else 0
'''
_FIXED = '''\
def count_words(text: str) -> int:
    """How many words `text` holds."""
    return len(text.split())
'''
_HIDDEN_TESTS = """\
from wordcount import count_words


def test_single_spaces():
    assert count_words("one two three") == 3


def test_runs_of_spaces_and_line_breaks():
    assert count_words("one  two\\nthree   four") == 4
"""

_MODULE = '''\
"""wordcount: a one-task benchmark shipped as a plugin package (written by Clade's tests)."""

from __future__ import annotations

import json
import tempfile
from functools import cached_property
from pathlib import Path

from pydantic import Field

from benchmarks.base import GradeReport, Task
from benchmarks.gitops import make_repo
from benchmarks.pytest_grading import grade_pytest
from benchmarks.spec import BenchmarkSpec, LoadContext
from contracts.benchmark_options import Options
from sandbox.base import SandboxBackend

DATA = Path(__file__).parent / "data"


class WordcountOptions(Options):
    """How many copies of the task to list (each its own instance id)."""

    copies: int = Field(default=1, ge=1, le=3)


class Wordcount:
    name = "wordcount"

    def __init__(self, options: WordcountOptions) -> None:
        self.options = options

    @cached_property
    def _tasks(self) -> list[Task]:
        fields = json.loads((DATA / "task.json").read_text())
        with tempfile.TemporaryDirectory() as tmp:
            base = self.prepare_repo(None, Path(tmp) / "repo")
        return [
            Task(
                **fields,
                instance_id=f"wordcount__split-{n}",
                base_commit=base,
                problem_statement=(DATA / "statement.md").read_text(),
                patch=(DATA / "gold.patch").read_text(),
                test_patch=(DATA / "test.patch").read_text(),
            )
            for n in range(1, self.options.copies + 1)
        ]

    def tasks(self) -> list[Task]:
        return list(self._tasks)

    def subsets(self) -> dict[str, list[str]]:
        return {"all": [task.instance_id for task in self._tasks]}

    def prepare_repo(self, task: Task | None, dest: Path) -> str:
        return make_repo(DATA / "repo", dest, "wordcount: base state")

    def grade(
        self, task: Task, diff: str, backend: SandboxBackend, image: str, timeout_s: float
    ) -> GradeReport:
        with tempfile.TemporaryDirectory(prefix="wordcount-grade-", ignore_cleanup_errors=True) as tmp:
            repo = Path(tmp) / "repo"
            self.prepare_repo(task, repo)
            return grade_pytest(
                task, repo, diff, backend=backend, image=image, timeout_s=timeout_s, work_dir=Path(tmp)
            )


def _build(options: WordcountOptions, _context: LoadContext) -> Wordcount:
    return Wordcount(options)


BENCHMARK = BenchmarkSpec(
    name="wordcount", options=WordcountOptions, factory=_build, description="counts words (a test plugin)"
)
'''


def _diff(base: dict[str, str], changed: dict[str, str]) -> str:
    """The unified diff (a/ and b/ paths) that turns the files `base` into `base | changed`."""
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        for path, text in base.items():
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            (repo / path).write_text(text)
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@localhost"]
        subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
        subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
        subprocess.run([*git, "commit", "-qm", "base"], cwd=repo, check=True)
        for path, text in changed.items():
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            (repo / path).write_text(text)
        subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
        done = subprocess.run(
            [*git, "diff", "--cached"], cwd=repo, check=True, capture_output=True, text=True
        )
        return done.stdout


def write_entry_point(site: Path, *, dist: str, name: str, value: str) -> None:
    """An installed distribution `dist` 1.0 in `site` whose only content is the entry point
    `name = value` in the clade.benchmarks group."""
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[clade.benchmarks]\n{name} = {value}\n")


def write_wordcount_plugin(
    site: Path, *, dist: str = "clade-wordcount", module: str = "clade_wordcount"
) -> None:
    """The wordcount benchmark as the installed distribution `dist` (package `module`) in `site`."""
    data = site / module / "data"
    (data / "repo").mkdir(parents=True)
    (site / module / "__init__.py").write_text(_MODULE)
    (data / "repo" / "wordcount.py").write_text(_BUGGY)
    (data / "statement.md").write_text(f"{STATEMENT}\n\n`count_words` should split on any whitespace.\n")
    base = {"wordcount.py": _BUGGY}
    (data / "gold.patch").write_text(_diff(base, {"wordcount.py": _FIXED}))
    (data / "test.patch").write_text(_diff(base, {"tests/test_wordcount.py": _HIDDEN_TESTS}))
    (data / "task.json").write_text(
        dedent("""\
        {
          "repo": "wordcount/wordcount",
          "FAIL_TO_PASS": ["tests/test_wordcount.py::test_runs_of_spaces_and_line_breaks"],
          "PASS_TO_PASS": ["tests/test_wordcount.py::test_single_spaces"],
          "test_command": ["python", "-m", "pytest", "-rA", "tests"]
        }
        """)
    )
    write_entry_point(site, dist=dist, name=WORDCOUNT, value=f"{module}:BENCHMARK")
