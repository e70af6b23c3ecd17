"""SWE-bench Pro rows: loading, the published field formats, the parser's output, the export.

No sandbox here: the rows are the fixture set's with images never built.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchmarks.base import TestStatus
from benchmarks.registry import installed_registry
from benchmarks.swebench_pro import (
    SWEbenchPro,
    SWEbenchProOptions,
    UnsupportedRow,
    decide,
    image_name,
    pro_predictions_json,
    read_output,
    staged_test_paths,
    text_list,
)
from benchmarks.swebench_pro.grading import ParserFailed, run_entry
from benchmarks.swebench_pro.tasks import SWEbenchProTask
from contracts.benchmark_options import BenchmarkOptionError
from tests.benchmarks.swebench_pro.fixture_set import IMAGE_REPOSITORY, RUN_SCRIPTS

PYCLIP = "instance_clade-fixtures__pyclip-2f0c1d5e"
GOSUM = "instance_clade-fixtures__gosum-7a41c2b9"
JSSLUG = "instance_clade-fixtures__jsslug-c93e0d14-vnan"


def load(dataset: Path, scripts: Path = RUN_SCRIPTS, **options: object) -> SWEbenchPro:
    return SWEbenchPro(SWEbenchProOptions(dataset=str(dataset), scripts=str(scripts), **options))


def test_rows_of_each_language_load_with_their_scripts(pro_offline_dataset: Path) -> None:
    bench = load(pro_offline_dataset)
    tasks = {task.instance_id: task for task in bench.tasks()}
    assert list(tasks) == [PYCLIP, GOSUM, JSSLUG]
    py = tasks[PYCLIP]
    assert isinstance(py, SWEbenchProTask)
    # Python list literals in the row, as the published dataset stores them.
    assert py.FAIL_TO_PASS == ["tests/test_clip.py | ClipTest.test_above"]
    assert py.selected_test_files_to_run == ["tests/test_clip.py"]
    assert py.repo_path == "/app"
    assert py.image == "jefzda/sweap-images:pyclip-unbuilt"
    assert py.run_script == (RUN_SCRIPTS / PYCLIP / "run_script.sh").read_text()
    assert py.parser == (RUN_SCRIPTS / PYCLIP / "parser.py").read_text()
    # The agent reads the issue, the requirements and the new interfaces, never the tests.
    assert "Requirements:\n- `clip(value, low, high)` must return `high`" in py.problem_statement
    assert "New interfaces introduced:\nNo new interfaces" in py.problem_statement
    assert "test_above" not in py.problem_statement
    assert {task.repo_language for task in tasks.values()} == {"python", "go", "js"}
    assert bench.subsets()["language:go"] == [GOSUM]
    assert bench.subsets()["repo:clade-fixtures/jsslug"] == [JSSLUG]


def test_selection_options(pro_offline_dataset: Path) -> None:
    assert [t.instance_id for t in load(pro_offline_dataset, subset="language:js").tasks()] == [JSSLUG]
    picked = load(pro_offline_dataset, instance_ids=[GOSUM, PYCLIP])
    assert [t.instance_id for t in picked.tasks()] == [GOSUM, PYCLIP]
    with pytest.raises(ValueError, match="instance_ids: the rows have no instance instance_nope"):
        load(pro_offline_dataset, instance_ids=["instance_nope"])
    with pytest.raises(ValueError, match="no subset 'language:rust'"):
        load(pro_offline_dataset, subset="language:rust")


def test_a_row_without_its_scripts_is_refused_naming_the_file(
    pro_offline_dataset: Path, tmp_path: Path
) -> None:
    scripts = tmp_path / "run_scripts"
    shutil.copytree(RUN_SCRIPTS, scripts)
    (scripts / GOSUM / "parser.py").unlink()
    with pytest.raises(UnsupportedRow, match=f"{GOSUM}: no parser.py at {scripts / GOSUM / 'parser.py'}"):
        load(pro_offline_dataset, scripts)
    with pytest.raises(ValueError, match=r"scripts: .* is not a folder"):
        load(pro_offline_dataset, tmp_path / "absent")


def test_rows_missing_fields_or_tests_are_refused(pro_offline_dataset: Path, tmp_path: Path) -> None:
    rows = [json.loads(line) for line in pro_offline_dataset.read_text().splitlines()]
    del rows[0]["test_patch"]
    broken = tmp_path / "no-test-patch.jsonl"
    broken.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(UnsupportedRow, match=f"{PYCLIP}: not a SWE-bench Pro row: no test_patch"):
        load(broken)
    rows = [json.loads(line) for line in pro_offline_dataset.read_text().splitlines()]
    rows[1]["fail_to_pass"], rows[1]["pass_to_pass"] = "[]", "[]"
    empty = tmp_path / "no-tests.jsonl"
    empty.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(UnsupportedRow, match=f"{GOSUM}: fail_to_pass and pass_to_pass are both empty"):
        load(empty)


def test_test_lists_are_read_as_data() -> None:
    assert text_list('["a", "b"]', "f", "i") == ["a", "b"]
    assert text_list("['a | x', \"b\"]", "f", "i") == ["a | x", "b"]
    assert text_list(["a"], "f", "i") == ["a"]
    assert text_list("", "f", "i") == []
    with pytest.raises(UnsupportedRow, match="i: f is not a list"):
        text_list("__import__('os').system('true')", "f", "i")
    with pytest.raises(UnsupportedRow, match="i: f is not a list of strings"):
        text_list("[1, 2]", "f", "i")


def test_image_names() -> None:
    row = {"instance_id": "instance_NodeBB__NodeBB-00c7-vnan", "repo": "NodeBB/NodeBB"}
    assert image_name({**row, "dockerhub_tag": "given"}, "jefzda/sweap-images") == "jefzda/sweap-images:given"
    # Without the tag: the upload's rule (lower-case repo, no "instance_", no "-vnan").
    assert image_name(row, "mirror/pro") == "mirror/pro:nodebb.nodebb-NodeBB__NodeBB-00c7"
    long = {"instance_id": "instance_a__b-" + "f" * 200, "repo": "a/b"}
    assert len(image_name(long, "r").partition(":")[2]) == 128


def test_the_staged_test_files_come_from_the_last_line() -> None:
    cmd = (
        "git reset --hard abc\ngit clean -fd \n"
        "git checkout abc \ngit checkout def -- test/a.js test/b x_test.go"
    )
    assert staged_test_paths(cmd) == ["test/a.js", "test/b", "x_test.go"]
    assert staged_test_paths("git reset --hard abc") == []
    assert staged_test_paths("") == []


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_parser_output_is_read_strictly(tmp_path: Path) -> None:
    good = {
        "tests": [
            {"name": "a", "status": "FAILED"},
            {"name": "a", "status": "PASSED"},
            {"name": "b", "status": "weird"},
        ]
    }
    statuses = read_output(write(tmp_path / "ok.json", json.dumps(good)), 0, "")
    # Pro's rule: one PASSED entry passes the test; an unknown status is an error.
    assert statuses == {"a": TestStatus.PASSED, "b": TestStatus.ERROR}
    with pytest.raises(ParserFailed, match=r"the parser wrote no output\.json \(the parser exited 1: boom\)"):
        read_output(tmp_path / "absent.json", 1, "Traceback\nboom\n")
    with pytest.raises(ParserFailed, match="malformed"):
        read_output(write(tmp_path / "trunc.json", '{"tests": [{"name": "a", "sta'), 0, "")
    with pytest.raises(ParserFailed, match="malformed"):
        read_output(write(tmp_path / "shape.json", '{"tests": {"a": "PASSED"}}'), 0, "")
    with pytest.raises(ParserFailed, match="malformed"):
        read_output(write(tmp_path / "list.json", '[{"name": "a", "status": "PASSED"}]'), 0, "")
    (tmp_path / "link.json").symlink_to(tmp_path / "ok.json")
    with pytest.raises(ParserFailed, match="not a regular file"):
        read_output(tmp_path / "link.json", 0, "")


def test_resolved_needs_every_graded_test_passed(pro_offline_dataset: Path) -> None:
    task = next(t for t in load(pro_offline_dataset).tasks() if t.instance_id == PYCLIP)
    assert isinstance(task, SWEbenchProTask)
    every = {test: TestStatus.PASSED for test in [*task.FAIL_TO_PASS, *task.PASS_TO_PASS]}
    assert decide(task, every)[0]
    missing = dict(every)
    missing.pop(task.PASS_TO_PASS[0])
    resolved, f2p, p2p = decide(task, missing)
    assert not resolved and p2p.failure == [task.PASS_TO_PASS[0]] and f2p.failure == []
    assert not decide(task, {**every, task.FAIL_TO_PASS[0]: TestStatus.SKIPPED})[0]


def test_predictions_in_pros_patch_format() -> None:
    text = pro_predictions_json(
        [("instance_a", "clade-agent-1", "diff --git a/x b/x\n"), ("instance_b", "clade-agent-1", "")]
    )
    assert json.loads(text) == [
        {"instance_id": "instance_a", "patch": "diff --git a/x b/x\n", "prefix": "clade-agent-1"},
        {"instance_id": "instance_b", "patch": "", "prefix": "clade-agent-1"},
    ]
    with pytest.raises(ValueError, match="instance 'instance_a' has two predictions"):
        pro_predictions_json([("instance_a", "p", ""), ("instance_a", "p", "")])


def test_registered_with_checked_options(pro_offline_dataset: Path) -> None:
    spec = installed_registry().spec("swebench-pro")
    options = spec.parse(
        {
            "dataset": str(pro_offline_dataset),
            "scripts": str(RUN_SCRIPTS),
            "image_repository": IMAGE_REPOSITORY,
        }
    )
    assert [task.instance_id for task in spec.build(options).tasks()] == [PYCLIP, GOSUM, JSSLUG]
    with pytest.raises(BenchmarkOptionError, match="unknown option of swebench-pro"):
        spec.parse({"dataset": "x.jsonl", "scripts": ".", "scrpts": "."})
    with pytest.raises(BenchmarkOptionError):
        spec.parse({"dataset": "x.jsonl"})  # scripts is required


def test_the_run_script_gets_the_selected_tests_as_pros_script_passes_them(pro_offline_dataset: Path) -> None:
    task = next(t for t in load(pro_offline_dataset).tasks() if t.instance_id == GOSUM)
    assert isinstance(task, SWEbenchProTask)
    entry = run_entry(task).splitlines()
    # The last line of before_repo_set_cmd only (the others would reset the agent's work).
    assert entry[2].startswith("git checkout ") and entry[2].endswith(" -- sum_test.go")
    assert "git reset" not in "\n".join(entry)
    assert entry[3].startswith("bash /clade/pro/run_script.sh TestSumNegative,TestSumPositive > ")
    spaced = task.model_copy(update={"selected_test_files_to_run": ["a b", "$(c)*"]})
    assert "run_script.sh a 'b,$(c)*' > " in run_entry(spaced)  # split at spaces, never expanded
    none = task.model_copy(update={"selected_test_files_to_run": []})
    assert "run_script.sh  > " in run_entry(none)  # no argument: the run script runs every test
