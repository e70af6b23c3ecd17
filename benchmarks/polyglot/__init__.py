"""polyglot: exercises in the Aider polyglot layout, one task per exercise.

    get_benchmark("polyglot")                                  # the Python fixtures shipped with Clade
    get_benchmark("polyglot", root="/data/polyglot-benchmark", languages=["python", "go"])

A task's statement is the exercise's instructions plus which files to edit; its
repository holds the stub solution files and the tests (as in Aider's benchmark), not
the example solution; its gold patch turns the stubs into the example solution.
Grading puts the tests back as shipped and passes when the language's test command
exits 0 (see `grading.py`). Python exercises run in Clade's base image; the others in the
toolchain image (`image.py`; the `image` option names another), whose tag each task
carries. Loading never asks a sandbox engine (the service loads benchmarks to plan runs):
a language outside `available_languages`, when the run gives it, is refused at load; the
toolchain image itself is looked for and probed on the worker, before a task of its language
runs or is graded (`check_environment`), and a language it lacks raises `ToolchainMissing`
naming it (see `toolchains.py`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks.base import BrokenTask, GradeReport, Task, UnknownTask
from benchmarks.polyglot.fixtures import FIXTURES_DIR
from benchmarks.polyglot.grading import grade_exercise
from benchmarks.polyglot.image import polyglot_image_tag
from benchmarks.polyglot.languages import BASE_IMAGE_LANGUAGES, LANGUAGES, SPECS, LanguageName
from benchmarks.polyglot.layout import (
    ID_PREFIX,
    Exercise,
    build_repo,
    exercise_folders,
    gold_patch,
    load_exercise,
    statement,
)
from benchmarks.polyglot.options import PolyglotOptions, PolyglotOptionsError
from benchmarks.polyglot.toolchains import (
    ImageToolchains,
    ToolchainMissing,
    ToolchainProbe,
    check_toolchains,
    image_probe,
    require_image,
)
from benchmarks.spec import validate_options
from sandbox.base import SandboxBackend, SandboxError

__all__ = [
    "FIXTURES_DIR",
    "LANGUAGES",
    "Exercise",
    "Polyglot",
    "PolyglotOptions",
    "PolyglotOptionsError",
    "ToolchainMissing",
    "ToolchainProbe",
    "image_probe",
]

_BUILD_THREADS = 8
REPO_PARENT = "/clade/exercises"


class Polyglot:
    """The benchmark, from `PolyglotOptions` (a run configuration's) or the same options as
    keywords; `probe` (a Python hook, not a run option) answers for the toolchain image, at
    load and in `check_environment`, instead of a sandbox of it."""

    name = "polyglot"

    def __init__(
        self, typed: PolyglotOptions | None = None, *, probe: ToolchainProbe | None = None, **options: Any
    ) -> None:
        if probe is not None and not callable(probe):
            raise PolyglotOptionsError("probe", "must be a function (a Python hook, not a run option)")
        if typed is not None and options:
            raise TypeError("give options either validated (PolyglotOptions) or as keywords, not both")
        self.options: PolyglotOptions = (
            typed if typed is not None else validate_options(self.name, PolyglotOptions, options)
        )
        self.root = self.options.root or FIXTURES_DIR
        exercises = self._select()
        self.toolchain_image = self.options.image or polyglot_image_tag()
        self._probe = probe
        self._toolchains = ImageToolchains()
        if self.options.available_languages is not None or probe is not None:
            check_toolchains(
                dict.fromkeys(exercise.language for exercise in exercises),
                available=self.options.available_languages,
                probe=probe or _unasked,
            )
        with (
            tempfile.TemporaryDirectory(prefix="clade-polyglot-") as tmp,
            ThreadPoolExecutor(_BUILD_THREADS) as pool,
        ):
            # Each task's base commit and gold patch come from a scratch repository.
            scratch = [Path(tmp) / str(index) for index in range(len(exercises))]
            images = [
                None if exercise.language in BASE_IMAGE_LANGUAGES else self.toolchain_image
                for exercise in exercises
            ]
            self._tasks: list[Task] = list(pool.map(_task, exercises, scratch, images))
        self._exercises = {exercise.instance_id: exercise for exercise in exercises}

    @property
    def languages(self) -> list[LanguageName]:
        return list(dict.fromkeys(exercise.language for exercise in self._exercises.values()))

    def tasks(self) -> list[Task]:
        return list(self._tasks)

    def subsets(self) -> dict[str, list[str]]:
        ids = [task.instance_id for task in self._tasks]
        by_language: dict[str, list[str]] = {
            language: [key for key, exercise in self._exercises.items() if exercise.language == language]
            for language in self.languages
        }
        return {"all": ids, **by_language}

    def exercise(self, task: Task) -> Exercise:
        try:
            return self._exercises[task.instance_id]
        except KeyError:
            raise UnknownTask(f"{self.name} has no task {task.instance_id!r}") from None

    def prepare_repo(self, task: Task, dest: Path) -> str:
        sha = build_repo(self.exercise(task), dest)
        if sha != task.base_commit:
            # The exercise's files changed after the benchmark was loaded.
            raise BrokenTask(f"{task.instance_id}: built base commit {sha}, the task says {task.base_commit}")
        return sha

    def check_environment(self, task: Task, backend: SandboxBackend) -> None:
        """Raise `ToolchainMissing` unless `backend` has the image `task` runs in with its
        language's toolchain (the image probed once; trusted to have what the run's
        `available_languages` declares)."""
        language = self.exercise(task).language
        if task.image is None:  # Python: Clade's base image
            return
        if self._probe is None and self.options.available_languages is not None:
            try:
                require_image(backend, task.image)
            except SandboxError as exc:
                raise ToolchainMissing(f"polyglot cannot run {language} exercises: {exc}") from exc
            return
        check_toolchains(
            [language], available=None, probe=self._probe or self._toolchains.probe(backend, task.image)
        )

    def grade(
        self, task: Task, diff: str, backend: SandboxBackend, image: str, timeout_s: float
    ) -> GradeReport:
        exercise = self.exercise(task)
        self.check_environment(task, backend)
        image = task.image or image  # the toolchain image, for all languages but Python
        # ignore_cleanup_errors: files the sandbox user created may not be removable by us.
        with tempfile.TemporaryDirectory(prefix="clade-grade-", ignore_cleanup_errors=True) as tmp:
            repo = Path(tmp) / "repo"
            self.prepare_repo(task, repo)
            return grade_exercise(
                task,
                exercise,
                repo,
                diff,
                backend=backend,
                image=image,
                timeout_s=timeout_s,
                work_dir=Path(tmp),
            )

    def _select(self) -> list[Exercise]:
        root = self.root
        if self.options.languages is not None:
            languages = list(self.options.languages)
            for index, language in enumerate(languages):
                if not exercise_folders(root, language):
                    raise PolyglotOptionsError(
                        f"languages.{index}", f"no exercises in {root / language / 'exercises' / 'practice'}"
                    )
        else:
            languages = [language for language in LANGUAGES if exercise_folders(root, language)]
            if not languages:
                raise PolyglotOptionsError(
                    "root", f"{root} has no <language>/exercises/practice/<exercise>/ folder"
                )
        folders = [
            (language, folder) for language in languages for folder in exercise_folders(root, language)
        ]
        wanted = self.options.exercises
        if wanted is not None:
            keys = {f"{language}/{folder.name}" for language, folder in folders}
            names = {folder.name for _, folder in folders}
            for index, entry in enumerate(wanted):
                if entry not in keys and entry not in names:
                    raise PolyglotOptionsError(
                        f"exercises.{index}", f"no exercise {entry!r} in {', '.join(languages)} under {root}"
                    )
            folders = [
                (language, folder)
                for language, folder in folders
                if folder.name in wanted or f"{language}/{folder.name}" in wanted
            ]
        return [load_exercise(language, folder, root) for language, folder in folders]


def _unasked(tools: Sequence[str]) -> set[str]:
    raise AssertionError("available_languages answers at load; no image is asked")


def _task(exercise: Exercise, work: Path, image: str | None) -> Task:
    sha, patch = gold_patch(exercise, work)
    return Task(
        instance_id=exercise.instance_id,
        repo=f"{ID_PREFIX}/{exercise.key}",
        base_commit=sha,
        problem_statement=statement(exercise),
        patch=patch,
        test_patch="",  # the tests are in the repository, as in Aider's benchmark
        FAIL_TO_PASS=list(exercise.tests),
        PASS_TO_PASS=[],
        test_command=SPECS[exercise.language].command(list(exercise.tests)),
        # Named after the exercise: C++'s CMakeLists takes the exercise's name from its folder.
        repo_path=f"{REPO_PARENT}/{exercise.name}",
        image=image,
    )
