"""The guards of a SWE-bench instance that pytest runs: twins in its test files and pytest's
own structured report, written where the host watches.

The log that swebench's parsers read is the process's own output: the code under test can
print anything into it (a whole fake pytest session after the real one, whose PASSED lines
the parser keeps as the last word). So for these instances the eval script also

1. copies the hidden test files with must-fail twins planted (`must_fail.py`) over the test
   patch's files, right after the script applied it. The host computes those files from the
   base commit and the test patch, and the script copies one only if the file it finds has
   the hash the host expects; otherwise it prints `CLADE_TWINS_NOT_PLANTED <path>`, and the
   verdict is "not resolved" (untrusted), never a pass without twins;
2. loads the grader's results plugin (`pytest_plugin.py`, through `PYTHONPATH` and
   `PYTEST_ADDOPTS=-p ...`) that writes each test's outcome, the session's exit status and
   the grading's nonce into a folder mounted from the host and watched (`write_watch.py`)
   until the sandbox is gone.

Then (`judge`), on top of swebench's verdict: more than one write of a results file,
another file in that folder, a results file without the nonce, a twin reported wrong,
an exit of 0, a last session whose exit status is not the test command's, or a graded
test that the log says passed while pytest's report says otherwise: tampered. No results
file, or a graded test the log passes that pytest's report does not have: not resolved.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.base import TestStatus
from benchmarks.gitops import apply_patch, git_ok
from benchmarks.must_fail import MustFail, plan_twins
from benchmarks.pytest_grading import (
    GRADING_FILE,
    MAX_RESULTS_BYTES,
    PLUGIN_MODULE,
    PLUGIN_SOURCE,
    PYTEST_LAST_EXIT_CODE,
    RESULTS_FILE,
    PluginResults,
)
from benchmarks.swebench.patches import touched_paths
from benchmarks.swebench.tasks import EVAL_DIR, SWEbenchTask
from benchmarks.write_watch import Change

NOT_PLANTED = "CLADE_TWINS_NOT_PLANTED"
RESULTS_MOUNT = "/clade/results"
GRADER_SUBDIR = "grader"
TWINS_SUBDIR = "twins"
_RESULTS_NAME = re.compile(r"^results(?:\.([0-9]+))?\.json$")
_SAFE_PATH = re.compile(r"^[A-Za-z0-9_./-]+$")
# swebench's own success statuses (what get_eval_report counts as passing).
_LOG_PASSES = frozenset({"PASSED", "XFAIL"})


@dataclass(frozen=True)
class Guard:
    """What one grading planted, and where its evidence lands on the host."""

    must_fail: MustFail
    nonce: str
    results: Path
    planted: tuple[str, ...]  # test files the script replaces with their twinned version


def test_files(task: SWEbenchTask) -> list[str]:
    """The hidden tests' Python files (FAIL_TO_PASS's first) that the test patch touches."""
    patched = set(touched_paths(task.test_patch))
    paths = [
        test_id.split("::", 1)[0] for test_id in [*task.FAIL_TO_PASS, *task.PASS_TO_PASS] if "::" in test_id
    ]
    return [p for p in dict.fromkeys(paths) if p.endswith(".py") and p in patched and _SAFE_PATH.match(p)]


def patched_texts(task: SWEbenchTask, repo: Path, paths: list[str], scratch: Path) -> dict[str, str]:
    """`paths` as the eval script leaves them: at the base commit, with the test patch applied."""
    scratch.mkdir(parents=True)
    git_ok(scratch, "init", "--quiet", "--initial-branch=main")
    for path in touched_paths(task.test_patch):
        # Bytes, not text: the eval script's `git checkout` writes them so (CRLF stays CRLF).
        shown = subprocess.run(
            ["git", "-c", "safe.directory=*", "show", f"{task.base_commit}:{path}"],
            cwd=repo,
            capture_output=True,
            check=False,
        )
        if shown.returncode == 0:
            target = scratch / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(shown.stdout)
    if not apply_patch(scratch, task.test_patch).applied:
        return {}
    texts = {}
    for path in paths:
        target = scratch / path
        if target.is_file() and not target.is_symlink():
            try:  # byte for byte: the script compares the file's hash
                texts[path] = target.read_bytes().decode("utf-8")
            except UnicodeDecodeError:
                continue
    return texts


def prepare(
    task: SWEbenchTask, repo: Path, script: str, eval_dir: Path, work: Path
) -> tuple[str, Guard] | None:
    """The eval script with twins and the results plugin, and what to check afterwards;
    None when no test file can take twins (the caller falls back to the canaries)."""
    paths = test_files(task)
    if not paths or START_MARKER not in script:
        return None
    texts = patched_texts(task, repo, paths, work / "twins-source")
    twins, twinned = plan_twins(texts, (task.FAIL_TO_PASS, task.PASS_TO_PASS))
    if not twins:
        return None
    nonce = os.urandom(16).hex()
    grader, copies, results = eval_dir / GRADER_SUBDIR, eval_dir / TWINS_SUBDIR, work / "results"
    for folder in (grader, copies, results):
        folder.mkdir()
    shutil.copyfile(PLUGIN_SOURCE, grader / f"{PLUGIN_MODULE}.py")
    (grader / GRADING_FILE).write_text(json.dumps({"nonce": nonce}))
    lines = []
    for number, (path, text) in enumerate(twinned.items()):
        (copies / str(number)).write_bytes(text.encode("utf-8"))
        expected = hashlib.sha256(texts[path].encode()).hexdigest()
        quoted, copy = shlex.quote(path), shlex.quote(f"{EVAL_DIR}/{TWINS_SUBDIR}/{number}")
        lines.append(
            f'if [ "$(sha256sum < {quoted} | cut -d " " -f 1)" = "{expected}" ]; '
            f'then cp {copy} {quoted}; else echo "{NOT_PLANTED} {path}"; fi'
        )
    grader_dir = f"{EVAL_DIR}/{GRADER_SUBDIR}"
    lines += [
        f'export PYTHONPATH="{grader_dir}${{PYTHONPATH:+:$PYTHONPATH}}"',
        f'export PYTEST_ADDOPTS="${{PYTEST_ADDOPTS:+$PYTEST_ADDOPTS }}-p {PLUGIN_MODULE}"',
        f"export CLADE_GRADING_FILE={grader_dir}/{GRADING_FILE}",
        f"export CLADE_RESULTS_FILE={RESULTS_MOUNT}/{RESULTS_FILE}",
        "export CLADE_RESULTS_SESSIONS=1",
    ]
    for folder in (grader, copies):
        os.chmod(folder, 0o755)
        for entry in folder.iterdir():
            os.chmod(entry, 0o644)
    os.chmod(results, 0o777)  # the eval script runs as the sandbox's unprivileged user
    guarded = _before_start(script, lines)
    return guarded, Guard(MustFail(twins=twins), nonce, results, tuple(twinned))


START_MARKER = ">>>>> Start Test Output"


def _before_start(script: str, added: list[str]) -> str:
    lines = script.split("\n")
    for i, line in enumerate(lines):
        if START_MARKER in line:
            return "\n".join([*lines[:i], *added, *lines[i:]])
    return script


@dataclass(frozen=True)
class Judged:
    tampered: str | None
    untrusted: str | None


def judge(
    guard: Guard,
    graded: Sequence[str],
    log_statuses: Mapping[str, TestStatus],
    changes: list[Change],
    exit_code: int | None,
    log: str,
) -> Judged:
    """The guard's evidence on one run (`graded`: the FAIL_TO_PASS and PASS_TO_PASS tests);
    see the module docstring."""
    forged = _unexpected_changes(changes)
    if forged is not None:
        return Judged(forged, None)
    sessions = _read_sessions(guard.results)
    if sessions is None:
        return Judged(None, "a results file is a link, too large or unreadable")
    if any(session.nonce != guard.nonce for session in sessions):
        return Judged("a results file does not carry this grading's nonce", None)
    # Before the exit status: without its twins, an honest run may exit 0.
    skipped = [line for line in log.splitlines() if line.startswith(NOT_PLANTED)]
    if skipped:
        return Judged(None, f"the twins could not be planted ({skipped[0][len(NOT_PLANTED) + 1 :][:200]})")
    if exit_code == 0:
        wrong = guard.must_fail.check(_merged(sessions)) if sessions else None
        exited = f"the test command exited 0, although the must-fail {guard.must_fail.example} ran"
        return Judged(exited + (f"; {wrong}" if wrong else ""), None)
    if not sessions:
        return Judged(None, "pytest's structured report is missing (the grader's plugin did not run)")
    last = sessions[-1].exit_status
    if exit_code is not None and last != exit_code and 0 <= exit_code <= PYTEST_LAST_EXIT_CODE:
        return Judged(
            f"pytest's last session ended with exit status {last}, the test command exited {exit_code}", None
        )
    statuses = _merged(sessions)
    wrong = guard.must_fail.check(statuses)
    if wrong is not None:
        return Judged(wrong, None)
    for test in graded:
        said = log_statuses.get(test)
        if said is None or said.value not in _LOG_PASSES:
            continue
        found = _lookup(statuses, test)
        if not found:
            return Judged(None, f"pytest's report has no {test}, which the log says passed")
        worst = [status for status in found if status.value not in _LOG_PASSES]
        if worst:
            return Judged(
                f"the log says {test} {said.value}, pytest's own report says {worst[0].value}", None
            )
    return Judged(None, None)


def _unexpected_changes(changes: list[Change]) -> str | None:
    problems = []
    names = {c.name for c in changes}
    for name in sorted(n for n in names if _RESULTS_NAME.match(n or "")):
        creates = sum(1 for c in changes if c.name == name and c.kind == "create")
        closes = sum(1 for c in changes if c.name == name and c.kind == "close_write")
        if creates > 1 or closes > 1:
            problems.append(f"the results file {name} was created {creates} and written {closes} times")
    others = [
        c
        for c in changes
        if c.kind not in ("create", "modify", "close_write") or not _RESULTS_NAME.match(c.name or "")
    ]
    if others:
        shown = ", ".join(sorted({f"{c.kind} {c.name or '(the folder)'}" for c in others})[:10])
        problems.append(f"the results folder saw changes other than the plugin's writes: {shown}")
    return "; ".join(problems) or None


def _read_sessions(folder: Path) -> list[PluginResults] | None:
    """The plugin's results files in session order; None when one cannot be read."""
    found: list[tuple[int, PluginResults]] = []
    for path in folder.iterdir():
        match = _RESULTS_NAME.match(path.name)
        if match is None:
            continue
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_RESULTS_BYTES:
            return None
        try:
            results = PluginResults.model_validate_json(path.read_bytes())
        except ValueError:
            return None
        found.append((int(match.group(1) or 1), results))
    return [results for _, results in sorted(found, key=lambda item: item[0])]


_RANK = {
    TestStatus.PASSED: 0,
    TestStatus.XFAIL: 1,
    TestStatus.SKIPPED: 2,
    TestStatus.FAILED: 3,
    TestStatus.ERROR: 4,
}


def _merged(sessions: list[PluginResults]) -> dict[str, TestStatus]:
    merged: dict[str, TestStatus] = {}
    for session in sessions:
        for node, status in session.tests.items():
            previous = merged.get(node)
            if previous is None or _RANK.get(status, 4) > _RANK.get(previous, 4):
                merged[node] = status
    return merged


def _lookup(statuses: Mapping[str, TestStatus], test: str) -> list[TestStatus]:
    """The statuses of the nodes pytest reported for the log's test id `test`: the same id,
    or ids it is a prefix of (a log parser cuts parameter ids at a space), or the same
    id relative to another rootdir."""
    if test in statuses:
        return [statuses[test]]
    prefixed = [
        s
        for node, s in statuses.items()
        if node.startswith(test) and node[len(test) : len(test) + 1] in ("[", " ", "")
    ]
    if prefixed or not test.split("::", 1)[0]:
        return prefixed
    return [s for node, s in statuses.items() if node.endswith(f"/{test}") or test.endswith(f"/{node}")]
