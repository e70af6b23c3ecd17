"""The folder benchmark: a user's own tasks from a folder, graded by pytest or an evaluator.

The fixture folder (folder_fixture/) holds three tiny tasks on two repositories: calc-1
graded by pytest as clade-mini is, calc-2 and greet-1 by evaluator commands that print a
JSON verdict. Loading errors are checked on broken copies of it; grading runs in real
Docker sandboxes (the evaluator never runs on the host).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchmarks import get_benchmark
from benchmarks.catalog import BenchmarkCatalog
from benchmarks.check import check_benchmark
from benchmarks.folder import FolderBenchmark, FolderLayoutError, parse_verdict
from benchmarks.folder.layout import base_message
from benchmarks.gitops import make_repo
from contracts.benchmark_options import BenchmarkOptionError
from contracts.config import ConfigFieldError, RunConfig
from sandbox.base import SandboxBackend
from service.plan import RunPlan, plan_run

FIXTURE = Path(__file__).with_name("folder_fixture")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A copy of the fixture folder, free to break."""
    return Path(shutil.copytree(FIXTURE, tmp_path / "bench"))


def _edit_json(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_the_fixture_loads_in_suite_order_with_computed_base_commits(tmp_path: Path) -> None:
    bench = get_benchmark("folder", path=str(FIXTURE))
    assert [t.instance_id for t in bench.tasks()] == ["calc-1", "calc-2", "greet-1"]
    assert bench.subsets() == {"all": ["calc-1", "calc-2", "greet-1"], "evaluator": ["calc-2", "greet-1"]}
    calc = bench.tasks()[0]
    assert calc.problem_statement.startswith("# `add` subtracts")
    assert calc.base_commit == bench.prepare_repo(calc, tmp_path / "repo")
    assert (tmp_path / "repo" / "calc.py").is_file()
    assert bench.tasks()[1].test_command == ["python", "/clade/evaluator/check.py"]


def test_clade_mini_itself_is_a_folder_benchmark() -> None:
    from benchmarks.clade_mini import DATA_DIR, CladeMini

    assert FolderBenchmark(path=DATA_DIR).tasks() == CladeMini().tasks()


def test_without_suite_json_every_task_folder_is_a_task(folder: Path) -> None:
    (folder / "suite.json").unlink()
    bench = FolderBenchmark(path=folder)
    assert [t.instance_id for t in bench.tasks()] == ["calc-1", "calc-2", "greet-1"]
    assert bench.subsets() == {"all": ["calc-1", "calc-2", "greet-1"]}


def test_options_name_the_wrong_field(tmp_path: Path) -> None:
    with pytest.raises(BenchmarkOptionError, match=r"path: Field required") as missing:
        get_benchmark("folder")
    assert missing.value.field == "path"
    with pytest.raises(BenchmarkOptionError, match="is not a folder"):
        FolderBenchmark(path=tmp_path / "nowhere")
    with pytest.raises(BenchmarkOptionError, match=r"root: unknown option of folder \(known: path\)"):
        FolderBenchmark(path=FIXTURE, root=FIXTURE)


BREAKAGES: dict[str, tuple[Callable[[Path], None], str, str]] = {
    # name: (how the folder is broken, the file the error must name, what it must say)
    "missing task.json": (
        lambda f: (f / "tasks/calc-2/task.json").unlink(),
        "tasks/calc-2/task.json",
        "missing",
    ),
    "bad JSON": (
        lambda f: (f / "tasks/calc-1/task.json").write_text('{"repo": "calc",\n  "FAIL_TO_PASS": [}'),
        "tasks/calc-1/task.json",
        "bad JSON at line 2",
    ),
    "missing statement": (
        lambda f: (f / "tasks/greet-1/statement.md").unlink(),
        "tasks/greet-1/statement.md",
        "missing",
    ),
    "empty statement": (
        lambda f: (f / "tasks/greet-1/statement.md").write_text("\n"),
        "tasks/greet-1/statement.md",
        "is empty",
    ),
    "unknown field": (
        lambda f: _edit_json(f / "tasks/calc-1/task.json", lambda d: d.update(FAIL_TO_PAS=[])),
        "tasks/calc-1/task.json",
        "FAIL_TO_PAS: unknown field",
    ),
    "no way to grade": (
        lambda f: _edit_json(f / "tasks/calc-2/task.json", lambda d: d.pop("evaluator")),
        "tasks/calc-2/task.json",
        "exactly one of test_command",
    ),
    "pytest without FAIL_TO_PASS": (
        lambda f: _edit_json(f / "tasks/calc-1/task.json", lambda d: d.pop("FAIL_TO_PASS")),
        "tasks/calc-1/task.json",
        "needs FAIL_TO_PASS",
    ),
    "missing repository": (
        lambda f: shutil.rmtree(f / ".repos/greet"),
        "tasks/greet-1/task.json",
        "repo 'greet': no folder",
    ),
    "wrong base commit": (
        lambda f: _edit_json(f / "tasks/calc-1/task.json", lambda d: d.update(base_commit="0" * 40)),
        "tasks/calc-1/task.json",
        "does not match",
    ),
    "suite names a task without a folder": (
        lambda f: _edit_json(f / "suite.json", lambda d: d["tasks"].append("calc-9")),
        "suite.json",
        "task 'calc-9' has no folder",
    ),
    "subset names an unknown task": (
        lambda f: _edit_json(f / "suite.json", lambda d: d["subsets"].update(odd=["calc-7"])),
        "suite.json",
        "subset 'odd' names unknown tasks: calc-7",
    ),
    "id differs from the suite": (
        lambda f: _edit_json(f / "tasks/greet-1/task.json", lambda d: d.update(instance_id="greet-2")),
        "tasks/greet-1/task.json",
        "suite.json lists 'greet-1'",
    ),
    "no tasks folder": (lambda f: shutil.rmtree(f / "tasks"), "tasks", "missing"),
}


@pytest.mark.parametrize("breakage", list(BREAKAGES))
def test_a_malformed_folder_names_the_file_at_fault(folder: Path, breakage: str) -> None:
    breaks, culprit, says = BREAKAGES[breakage]
    breaks(folder)
    with pytest.raises(FolderLayoutError) as raised:
        FolderBenchmark(path=folder)
    assert raised.value.path == folder / culprit
    message = str(raised.value)
    assert message.startswith(f"{folder / culprit}: ") and says in message, message


VALID = '{"resolved": true, "reason": "ok", "tests": {"a": "PASSED", "b": "FAILED"}}'


def test_a_verdict_is_the_last_line_as_strict_json() -> None:
    verdict = parse_verdict(f'progress...\n{{"resolved": false}}\n{VALID}\n\n')
    assert not isinstance(verdict, str)
    assert verdict.resolved and verdict.reason == "ok" and verdict.tests == {"a": "PASSED", "b": "FAILED"}


@pytest.mark.parametrize(
    "stdout",
    [
        "",
        "   \n\n",
        "all good!",
        '{"resolved": true,}',  # not JSON
        '{"resolved": "true"}',  # a string is not a boolean
        '{"resolved": 1}',
        '{"resolved": null}',
        '{"reason": "no resolved key"}',
        '{"resolved": true, "score": 1.0}',  # an unknown key
        '{"resolved": true, "tests": {"a": "GREAT"}}',
        '[{"resolved": true}]',
        f"{VALID}\nDone.",  # the verdict is not the last line
        '{"resolved": true}{"resolved": true}',
    ],
)
def test_anything_but_a_valid_verdict_is_no_verdict(stdout: str) -> None:
    verdict = parse_verdict(stdout)
    assert isinstance(verdict, str), verdict
    assert verdict.startswith(
        ("the evaluator printed no verdict", "the evaluator's last line is not a valid")
    )


@pytest.mark.docker
def test_gold_resolves_and_empty_does_not_through_the_check_api(
    docker_backend: tuple[SandboxBackend, str],
) -> None:
    backend, image = docker_backend
    bench = FolderBenchmark(path=FIXTURE)
    checks = check_benchmark(bench, backend, image, timeout_s=120)
    assert [c.instance_id for c in checks] == ["calc-1", "calc-2", "greet-1"]
    for check in checks:
        assert check.ok, (check.problems, check.gold.reason, check.gold.log_tail, check.empty.log_tail)
        assert check.warnings == []
    by_id = {c.instance_id: c for c in checks}
    calc = by_id["calc-1"]
    assert calc.gold.FAIL_TO_PASS.success == bench.tasks()[0].FAIL_TO_PASS
    evaluated = by_id["calc-2"]
    assert evaluated.gold.reason == "resolved: 3/3 clamp cases"
    assert evaluated.gold.test_statuses["clamp_above"] == "PASSED"
    assert evaluated.empty.reason == "not resolved: 2/3 clamp cases"
    assert evaluated.empty.test_statuses["clamp_above"] == "FAILED"
    # greet-1's evaluator ran the hidden test that the test patch added.
    assert "2 passed" in by_id["greet-1"].gold.log_tail
    assert "test_greets_strangers" in by_id["greet-1"].empty.log_tail


BAD_EVALUATORS = {
    "malformed JSON": ("print('{\"resolved\": true,}')", "not a valid verdict"),
    "no verdict": ("print('looks good to me')", "not a valid verdict"),
    "silent": ("pass", "printed no verdict (it exited with code 0)"),
    "a crash": (
        "import sys; sys.exit('boom')",
        "printed no verdict (it exited with code 1; its last error line: 'boom')",
    ),
    "a string for resolved": ('print(\'{"resolved": "yes"}\')', "not a valid verdict"),
    "resolved but failing": (
        "import sys; print('{\"resolved\": true}'); sys.exit(3)",
        "exited with code 3 (its verdict said resolved)",
    ),
}


@pytest.mark.docker
@pytest.mark.parametrize("case", list(BAD_EVALUATORS))
def test_a_bad_evaluator_never_passes_the_gold_patch(
    folder: Path, docker_backend: tuple[SandboxBackend, str], case: str
) -> None:
    source, says = BAD_EVALUATORS[case]
    (folder / "tasks/calc-2/evaluator/check.py").write_text(source + "\n")
    backend, image = docker_backend
    bench = FolderBenchmark(path=folder)
    task = bench.tasks()[1]
    report = bench.grade(task, task.patch, backend, image, 60)
    assert not report.resolved and report.patch_applied
    assert report.reason.startswith("not resolved: ") and says in report.reason, report.reason
    assert report.FAIL_TO_PASS.failure == ["evaluator"]


def test_base_commits_do_not_depend_on_the_machine(tmp_path: Path) -> None:
    bench = FolderBenchmark(path=FIXTURE)
    greet = bench.tasks()[2]
    sha = make_repo(FIXTURE / ".repos/greet", tmp_path / "copy", base_message(greet.repo))
    assert sha == greet.base_commit


def test_a_run_config_names_the_folder_by_path(folder: Path) -> None:
    def config(stages: list[dict[str, Any]]) -> RunConfig:
        return RunConfig.model_validate(
            {
                "seed_agent": "a" * 40,
                "benchmark": {"name": "folder", "options": {"path": str(folder)}},
                "stages": stages,
            }
        )

    def plan(stages: list[dict[str, Any]]) -> RunPlan:
        return plan_run(config(stages), catalog=BenchmarkCatalog(), visibility_timeout_s=7200)

    assert plan([{"subset": "evaluator"}, {}]).stage_tasks == [
        ["calc-2", "greet-1"],
        ["calc-1", "calc-2", "greet-1"],
    ]
    (folder / "tasks/calc-1/statement.md").unlink()
    with pytest.raises(ConfigFieldError) as refused:
        plan([{}])
    assert str(folder / "tasks/calc-1/statement.md") in str(refused.value)
