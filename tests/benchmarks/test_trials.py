"""`clade bench check --trials k`: graders that are wrong sometimes are quarantined.

The rules (benchmarks/trials.py) on a fake benchmark whose verdicts each test chooses; then a
folder benchmark whose evaluator really flips between trials, graded through the folder
benchmark's own grade() on the local test double (its evaluator keeps a counter on the host,
which only a sandbox without isolation can reach: a real sandbox starts fresh every time);
then the command itself, in real Docker sandboxes, on a task whose empty patch passes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
from collections import Counter
from pathlib import Path

import pytest

from benchmarks import GradeReport, Task, TestGroupResult
from benchmarks.check import check_benchmark, judge_task, judge_trials, quarantine_record
from benchmarks.folder import FolderBenchmark
from benchmarks.trials import describe_flaky, flaky_tests, quarantine_evidence, trial_outcomes
from contracts.quarantine import FlakyTest, QuarantineFile, QuarantineFileError, load_quarantine
from tests.benchmarks.local_backend import IMAGE, LocalBackend
from tests.benchmarks.test_check import FakeBenchmark, make_task, run, sound
from tests.service.test_cli_bench import clade

FIXTURE = Path(__file__).with_name("folder_fixture")
NEW, OLD = "tests/test_a.py::test_new", "tests/test_a.py::test_old"
ONE_TRIAL_KEYS = ["instance_id", "ok", "gold_resolves", "empty_resolves", "starting_code_passes"]
ONE_TRIAL_KEYS += ["problems", "warnings", "duration_s"]


def graded(task: Task, *, resolved: bool, statuses: dict[str, str] | None = None) -> tuple[GradeReport, None]:
    """A grading that ran: resolved or not, with these test statuses (default: the new test's)."""
    status = "PASSED" if resolved else "FAILED"
    report = GradeReport(
        instance_id=task.instance_id,
        resolved=resolved,
        patch_applied=True,
        reason="resolved" if resolved else "not resolved",
        test_statuses=statuses if statuses is not None else {NEW: status, OLD: "PASSED"},
        FAIL_TO_PASS=TestGroupResult(**{"success" if resolved else "failure": [NEW]}),
        PASS_TO_PASS=TestGroupResult(success=[OLD]),
        duration_s=0.5,
    )
    return report, None


def test_a_task_that_holds_in_every_trial_is_not_quarantined() -> None:
    benchmark = FakeBenchmark(3, delay_s=0.01)
    calls: list[str] = []
    checks = run(benchmark, trials=3, progress=lambda task_id, *_: calls.append(task_id))
    assert all(check.ok and not check.quarantined for check in checks)
    assert all(check.evidence == [] and check.flaky_tests == [] for check in checks)
    assert [[t.trial for t in check.trials] for check in checks] == [[1, 2, 3]] * 3
    assert all(t.gold_resolved and not t.empty_resolved for check in checks for t in check.trials)
    # Each task graded 3 times with each patch; its progress once, after all six.
    assert Counter(benchmark.graded) == {
        (t.instance_id, d): 3 for t in benchmark.tasks() for d in (t.patch, "")
    }
    assert sorted(calls) == [task.instance_id for task in benchmark.tasks()]
    assert checks[0].duration_s == pytest.approx(3.0)


def test_gold_that_flips_is_quarantined_with_its_evidence_and_flaky_test() -> None:
    lock, seen = threading.Lock(), Counter[str]()

    def verdict(task: Task, diff: str) -> GradeReport:
        if diff != task.patch or task.instance_id != "fake__task-1":
            return sound(task, diff)
        with lock:  # the gold patch of task 1 resolves on its 1st and 3rd gradings, not its 2nd
            seen[task.instance_id] += 1
            turn = seen[task.instance_id]
        return graded(task, resolved=turn != 2)[0]

    first, second = run(FakeBenchmark(2, verdict), trials=3, workers=1)
    assert first.ok and not first.quarantined
    assert second.quarantined and not second.ok and not second.gold_resolves
    assert second.evidence == [
        "the gold patch flips: resolved in trial(s) 1, 3 of 3, not in 2 (not resolved)"
    ]
    assert second.problems == [
        "the verdict differs between trials",
        "the gold patch does not resolve it: not resolved",
    ]
    assert [(t.gold_resolved, t.gold_reason) for t in second.trials] == [
        (True, "resolved"),
        (False, "not resolved"),
        (True, "resolved"),
    ]
    assert second.flaky_tests == [FlakyTest(test=NEW, patch="gold", statuses=["PASSED", "FAILED", "PASSED"])]
    assert describe_flaky(second.flaky_tests[0]) == f"{NEW} (gold patch): PASSED, FAILED, PASSED"


def test_an_empty_patch_that_passes_once_or_always_is_quarantined() -> None:
    task = make_task(0)
    once = judge_trials(
        task,
        [graded(task, resolved=True)] * 2,
        [graded(task, resolved=False), graded(task, resolved=True)],
    )
    assert once.quarantined and once.empty_resolves and not once.starting_code_passes
    assert once.evidence == ["the empty patch resolved in trial(s) 2 of 2 (it flips): resolved"]
    assert [f.test for f in once.flaky_tests] == [NEW] and once.flaky_tests[0].patch == "empty"
    always = judge_trials(task, [graded(task, resolved=True)], [graded(task, resolved=True)])
    # One trial: today's verdict (a passing stub), and quarantined: a patch is not judged on it.
    assert always.problems == judge_task(task, *(graded(task, resolved=True)[0],) * 2).problems
    assert always.starting_code_passes and always.quarantined
    assert always.evidence == ["the empty patch resolved in trial(s) 1 of 1: resolved"]


def test_a_gold_patch_that_never_resolves_and_gradings_that_raised() -> None:
    task = make_task(0)
    stand_in = GradeReport(
        instance_id=task.instance_id,
        resolved=False,
        patch_applied=False,
        reason="grading failed: SandboxError: gone",
    )
    golds = [graded(task, resolved=False), (stand_in, "SandboxError: gone")]
    empties = [graded(task, resolved=False), graded(task, resolved=False, statuses={})]
    outcomes = trial_outcomes(golds, empties)
    assert quarantine_evidence(outcomes) == [
        "the gold patch resolved in none of 2 trial(s): not resolved; grading failed: SandboxError: gone"
    ]
    # A grading that raised reports no test: that is no flaky test. A test that one trial did not
    # report and another did is.
    assert flaky_tests(golds, empties) == [
        FlakyTest(test=NEW, patch="empty", statuses=["FAILED", None]),
        FlakyTest(test=OLD, patch="empty", statuses=["PASSED", None]),
    ]
    with pytest.raises(ValueError, match="as many gold as empty"):
        trial_outcomes(golds, empties[:1])


def test_trials_out_of_range_are_refused() -> None:
    for trials in (0, 101):
        with pytest.raises(ValueError, match="trials must be between 1 and 100"):
            run(FakeBenchmark(1), trials=trials)


def test_the_quarantine_file_holds_the_quarantined_tasks_only(tmp_path: Path) -> None:
    def verdict(task: Task, diff: str) -> GradeReport:
        return graded(task, resolved=True)[0] if task.instance_id == "fake__task-0" else sound(task, diff)

    checks = run(FakeBenchmark(2, verdict), trials=2)
    record = quarantine_record("fake", {"size": 2}, 2, checks)
    (tmp_path / "q.json").write_text(record.model_dump_json())
    loaded = load_quarantine(tmp_path / "q.json")
    assert (loaded.benchmark, loaded.options, loaded.trials) == ("fake", {"size": 2}, 2)
    assert list(loaded.tasks) == ["fake__task-0"]
    assert loaded.tasks["fake__task-0"].evidence == [
        "the empty patch resolved in trial(s) 1, 2 of 2: resolved"
    ]
    assert len(loaded.tasks["fake__task-0"].trials) == 2
    # A pipe would hold the caller (a run's plan) until a writer came; a directory is no file.
    os.mkfifo(tmp_path / "pipe")
    for odd in (tmp_path / "pipe", tmp_path):
        with pytest.raises(QuarantineFileError, match="not a regular file"):
            load_quarantine(odd)
    (tmp_path / "latin1.json").write_bytes(b'{"benchmark": "caf\xe9"}')
    with pytest.raises(QuarantineFileError, match="not a quarantine file"):
        load_quarantine(tmp_path / "latin1.json")


# The evaluator of a shaky task: it checks calc.clamp as calc-2's does, but each time the code
# is fixed it takes the next ticket from a counter on the host, and fails `clamp_above` on odd
# tickets. Tickets are files created exclusively, so concurrent gradings never share one.
SHAKY = """\
import json, os, subprocess, sys

COUNTER = {counter!r}
CASES = {{"above": ("5, 0, 3", "3"), "below": ("-2, 0, 3", "0"), "inside": ("2, 0, 3", "2")}}
tests = {{}}
for name, (args, expected) in CASES.items():
    done = subprocess.run([sys.executable, "-c", f"import calc; print(calc.clamp({{args}}))"],
                          capture_output=True, text=True, timeout=30)
    tests[f"clamp_{{name}}"] = "PASSED" if done.stdout.strip() == expected else "FAILED"
if all(status == "PASSED" for status in tests.values()):
    ticket = 0
    while True:
        try:
            os.close(os.open(os.path.join(COUNTER, str(ticket)), os.O_CREAT | os.O_EXCL))
            break
        except FileExistsError:
            ticket += 1
    if ticket % 2:
        tests["clamp_above"] = "FAILED"
passed = sum(status == "PASSED" for status in tests.values())
print(json.dumps({{"resolved": passed == 3, "reason": f"{{passed}}/3 clamp cases", "tests": tests}}))
"""
LENIENT = 'print(\'{"resolved": true, "reason": "looks fine"}\')\n'


def graders_folder(root: Path, counter: Path | None = None) -> Path:
    """The fixture's calc-2, and tasks on the same code with a lenient (and a shaky) evaluator."""
    folder = Path(shutil.copytree(FIXTURE, root / "bench"))
    names = ["calc-2", "lenient"]
    (folder / "tasks/lenient").mkdir()
    for part in ("statement.md", "gold.patch", "task.json"):
        shutil.copy(folder / "tasks/calc-2" / part, folder / "tasks/lenient" / part)
    (folder / "tasks/lenient/evaluator").mkdir()
    (folder / "tasks/lenient/evaluator/check.py").write_text(LENIENT)
    if counter is not None:
        shutil.copytree(folder / "tasks/calc-2", folder / "tasks/shaky")
        (folder / "tasks/shaky/evaluator/check.py").write_text(SHAKY.format(counter=str(counter)))
        names.insert(1, "shaky")
    (folder / "suite.json").write_text(json.dumps({"tasks": names}))
    return folder


def test_a_folder_task_whose_evaluator_flips_is_quarantined(tmp_path: Path) -> None:
    counter = tmp_path / "tickets"
    counter.mkdir()
    bench = FolderBenchmark(path=graders_folder(tmp_path, counter))
    stable, shaky, lenient = check_benchmark(bench, LocalBackend(), IMAGE, 60, trials=2)  # type: ignore[arg-type]
    assert stable.instance_id == "calc-2" and stable.ok and not stable.quarantined, stable.problems
    assert stable.flaky_tests == []
    # Two gold gradings of the shaky task took tickets 0 and 1: one resolved, one did not.
    assert sorted(p.name for p in counter.iterdir()) == ["0", "1"]
    assert shaky.quarantined and not shaky.ok
    [flips] = shaky.evidence
    assert re.fullmatch(
        r"the gold patch flips: resolved in trial\(s\) [12] of 2, not in [12] \(.*2/3 clamp cases\)", flips
    )
    assert sorted(t.gold_resolved for t in shaky.trials) == [False, True]
    assert not any(t.empty_resolved for t in shaky.trials)
    flaky = {(f.test, f.patch): sorted(s or "" for s in f.statuses) for f in shaky.flaky_tests}
    assert flaky == {
        ("clamp_above", "gold"): ["FAILED", "PASSED"],
        ("evaluator", "gold"): ["FAILED", "PASSED"],
    }
    assert lenient.quarantined and lenient.starting_code_passes
    assert lenient.evidence == ["the empty patch resolved in trial(s) 1, 2 of 2: resolved: looks fine"]


@pytest.mark.docker
def test_the_command_lists_the_quarantine_and_writes_its_file(tmp_path: Path) -> None:
    """In real Docker sandboxes: calc-2 holds in both trials; the lenient task is quarantined."""
    folder = graders_folder(tmp_path)
    out = tmp_path / "quarantine.json"
    args = ("bench", "check", str(folder), "--trials", "2", "--quarantine-out", str(out))
    shown = clade(*args)
    assert shown.exit_code == 0, (shown.stdout, shown.stderr)  # a passing stub is no failure
    assert "quarantined: 1 of 2 tasks (2 trial(s) each)" in shown.stdout
    assert "the empty patch resolved in trial(s) 1, 2 of 2: resolved: looks fine" in shown.stdout
    assert (
        "trial 2: gold resolved (resolved: looks fine); empty RESOLVED (resolved: looks fine)" in shown.stdout
    )
    assert "1 quarantined task(s) written to" in shown.stderr
    record = QuarantineFile.model_validate_json(out.read_text())
    assert (record.benchmark, record.options, record.trials) == ("folder", {"path": str(folder)}, 2)
    assert list(record.tasks) == ["lenient"]
    as_json = clade("--json", *args[:-2])
    checks = {c["instance_id"]: c for c in json.loads(as_json.stdout)}
    assert not checks["calc-2"]["quarantined"] and len(checks["calc-2"]["trials"]) == 2
    assert (
        checks["lenient"]["quarantined"] and checks["lenient"]["evidence"] == record.tasks["lenient"].evidence
    )
    assert "quarantined: 1 of 2 tasks" in as_json.stderr
    # One trial, no file asked for: today's output, without the trials' fields or section.
    once = clade("--json", "bench", "check", str(folder))
    assert once.exit_code == 0, once.stderr
    assert [sorted(c) for c in json.loads(once.stdout)] == [sorted(ONE_TRIAL_KEYS)] * 2
    assert "quarantined" not in once.stderr


def test_trials_below_one_is_a_usage_error() -> None:
    refused = clade("bench", "check", "clade-mini", "--trials", "0")
    assert (
        refused.exit_code == 2
        and "--trials" in refused.stderr
        and "greater than or equal to 1" in refused.stderr
    )
