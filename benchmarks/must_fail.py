"""The must-fail evidence of one pytest grading: twins of real hidden tests (`twins.py`), or,
when no hidden test can be twinned, the arithmetic canaries (`canaries.py`).

`plan_twins` writes the twins into the text of the hidden test files (up to `MAX_TWINS`,
at least one per file while there are twins to spare, the graded tests first:
FAIL_TO_PASS, then PASS_TO_PASS); `MustFail.check` reads the statuses back:

- a twin reported PASSED whose original passed too: tampered (both cannot pass);
- a twin reported SKIPPED or XFAIL whose original passed: tampered (the same code ran);
- a twin never reported, although its original was (and its file has no collection error):
  tampered.

A twin that passed while its original failed is honest: unfixed code can produce the
perturbed value (a near number, the other bool); the verdict is "not resolved" anyway.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.base import TestStatus
from benchmarks.canaries import Canaries, CanaryError, check, collection_failed, plant
from benchmarks.twins import Twin, candidates, write_twins

MAX_TWINS = 8
NO_TWINS_NOTE = "no hidden test could be twinned (no assertion on a literal): arithmetic canaries instead"


@dataclass(frozen=True)
class MustFail:
    """The twins planted for one grading, or the canaries that stand in for them."""

    twins: tuple[Twin, ...] = ()
    canaries: Canaries | None = None

    @property
    def note(self) -> str:
        """What the grading reason says about the must-fail evidence ("" for twins)."""
        return "" if self.twins else NO_TWINS_NOTE

    @property
    def example(self) -> str:
        """One must-fail test, to name in evidence."""
        if self.twins:
            twin = self.twins[0]
            return f"twin {twin.name} of {twin.original}"
        assert self.canaries is not None
        return f"canary {self.canaries.must_fail}"

    def is_planted(self, node: str) -> bool:
        if self.canaries is not None and self.canaries.is_canary(node):
            return True
        return any(_matches(node, twin.test_file, twin.name) for twin in self.twins)

    def without(self, statuses: Mapping[str, TestStatus]) -> dict[str, TestStatus]:
        return {node: status for node, status in statuses.items() if not self.is_planted(node)}

    def check(self, statuses: Mapping[str, TestStatus]) -> str | None:
        """Why the planted tests' statuses show tampering, or None."""
        problems = []
        if self.canaries is not None:
            wrong = check(self.canaries, statuses)
            if wrong is not None:
                problems.append(wrong)
        for twin in self.twins:
            problem = _twin_problem(twin, statuses)
            if problem is not None:
                problems.append(problem)
        return "; ".join(problems) or None


def _twin_problem(twin: Twin, statuses: Mapping[str, TestStatus]) -> str | None:
    nodes = [node for node in statuses if _matches(node, twin.test_file, twin.name)]
    which = f"the must-fail twin {twin.name} of {twin.original} ({twin.kind} perturbed)"
    if not nodes:
        # Missing is evidence when its original was reported: pytest collected them alike
        # (a class it does not collect, a module that does not import, lose both honestly).
        originals = [node for node in statuses if _matches(node, twin.test_file, twin.original)]
        if not originals or collection_failed(twin.test_file, statuses):
            return None
        return f"{which} was never reported, although its original was"
    for node in nodes:
        status = statuses[node]
        original = statuses.get(_original_node(node, twin))
        if status is TestStatus.PASSED and original is TestStatus.PASSED:
            return f"{which} and its original both passed"
        if status in (TestStatus.SKIPPED, TestStatus.XFAIL) and original is TestStatus.PASSED:
            return f"{which} was reported {status.value} while its original passed"
    return None


def _matches(node: str, test_file: str, name: str) -> bool:
    # The node's path is relative to pytest's rootdir, which may be below the repository's root.
    path, _, function = node.partition("::")
    function = function.rsplit("::", 1)[-1].split("[", 1)[0]
    if function != name or not path:
        return False
    return path == test_file or test_file.endswith(f"/{path}") or path.endswith(f"/{test_file}")


def _original_node(node: str, twin: Twin) -> str:
    head, _, last = node.rpartition("::")
    params = last[len(twin.name) :]
    return f"{head}::{twin.original}{params}"


def graded_names(test_ids: Sequence[str], test_file: str) -> list[str]:
    """The test functions (`name` or `Class::name`) of `test_file` among `test_ids`."""
    names = []
    for test_id in test_ids:
        path, sep, rest = test_id.partition("::")
        if sep and path == test_file:
            parts = rest.split("[", 1)[0].split("::")
            names.append("::".join(parts[-2:]))
    return names


def plan_twins(
    files: Mapping[str, str], tiers: Sequence[Sequence[str]] = (), *, total: int = MAX_TWINS
) -> tuple[tuple[Twin, ...], dict[str, str]]:
    """Twins for the test files `files` ({path: text}, in order of preference) and the new
    texts of the files that got some. `tiers` are test ids to twin first, tier by tier."""
    capacity = {path: len(candidates(text)) for path, text in files.items()}
    counts = dict.fromkeys(files, 0)
    while sum(counts.values()) < total:
        grown = False
        for path in files:
            if counts[path] < capacity[path] and sum(counts.values()) < total:
                counts[path] += 1
                grown = True
        if not grown:
            break
    twins: list[Twin] = []
    texts: dict[str, str] = {}
    for path, count in counts.items():
        if count == 0:
            continue
        prefer = [graded_names(tier, path) for tier in tiers]
        planted, text = write_twins(path, files[path], count=count, prefer=prefer)
        twins += planted
        texts[path] = text
    return tuple(twins), texts


def plant_must_fail(repo: Path, test_files: Sequence[str], tiers: Sequence[Sequence[str]] = ()) -> MustFail:
    """Plant twins into the `test_files` of `repo` (canaries in the first one when no test can
    be twinned). CanaryError when the first file is missing or not a regular file."""
    readable: dict[str, str] = {}
    for test_file in dict.fromkeys(test_files):
        path = repo / test_file
        if path.is_symlink() or not path.is_file() or not path.resolve().is_relative_to(repo.resolve()):
            if not readable and test_file == test_files[0]:
                raise CanaryError(f"{test_file} is not a regular file in the repository")
            continue
        try:  # byte for byte: the twinned file must differ from it by the twins alone
            readable[test_file] = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            continue
    twins, texts = plan_twins(readable, tiers)
    if not twins:
        return MustFail(canaries=plant(repo, test_files[0]))
    for test_file, text in texts.items():
        (repo / test_file).write_bytes(text.encode("utf-8"))
    return MustFail(twins=twins)
