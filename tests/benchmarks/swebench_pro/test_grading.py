"""SWE-bench Pro grading on the fixture set, in instance images of each language: gold
resolves and empty does not (what `clade bench check swebench-pro` runs), the parser's failures
are never a pass, and the agent's code cannot reach the parser or its output."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from benchmarks.check import check_benchmark
from benchmarks.gitops import git_ok
from benchmarks.swebench_pro import SWEbenchPro, SWEbenchProOptions
from sandbox.base import SandboxBackend
from sandbox.docker_images import DockerImages
from sandbox.images.pull import PullFailed
from tests.benchmarks.swebench_pro.conftest import ProSet
from tests.benchmarks.swebench_pro.fixture_set import IMAGE_REPOSITORY, RUN_SCRIPTS

pytestmark = pytest.mark.docker

PYCLIP = "instance_clade-fixtures__pyclip-2f0c1d5e"
TIMEOUT_S = 300


def diff_of(repo: Path, tmp: Path, edits: dict[str, str]) -> str:
    """The `git diff` an agent would hand back after writing `edits` into `repo`."""
    work = tmp / "agent"
    shutil.copytree(repo, work)
    for path, text in edits.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text)
    git_ok(work, "add", "--all", "--intent-to-add")
    return git_ok(work, "diff")


def test_gold_resolves_and_empty_does_not_in_each_language(
    pro_bench: SWEbenchPro, backend: SandboxBackend
) -> None:
    checks = check_benchmark(pro_bench, backend, "unused", TIMEOUT_S)
    assert [(c.instance_id, c.ok, c.problems) for c in checks] == [
        (task.instance_id, True, []) for task in pro_bench.tasks()
    ]
    for check in checks:
        task = next(t for t in pro_bench.tasks() if t.instance_id == check.instance_id)
        assert check.gold.FAIL_TO_PASS.success == task.FAIL_TO_PASS
        assert check.gold.PASS_TO_PASS.success == task.PASS_TO_PASS
        assert check.empty.FAIL_TO_PASS.failure == task.FAIL_TO_PASS
        assert check.empty.PASS_TO_PASS.failure == []  # the old tests pass on the base state
        assert check.gold.tests_exit_code == 0 and check.empty.tests_exit_code != 0


def test_the_agent_sees_the_base_commit_without_history(pro_bench: SWEbenchPro, tmp_path: Path) -> None:
    task = next(t for t in pro_bench.tasks() if t.instance_id == PYCLIP)
    pro_bench.prepare_repo(task, tmp_path / "repo")
    assert git_ok(tmp_path / "repo", "rev-list", "--all", "--count").strip() == "1"
    assert "return low\n    return value" in (tmp_path / "repo" / "clip.py").read_text().replace("\n\n", "\n")
    assert "test_above" not in (tmp_path / "repo" / "tests" / "test_clip.py").read_text()


def test_a_failing_or_silent_parser_is_never_a_pass(
    pro_set: ProSet, pro_client: Any, backend: SandboxBackend, tmp_path: Path
) -> None:
    scripts = tmp_path / "run_scripts"
    shutil.copytree(RUN_SCRIPTS, scripts)
    parser = scripts / PYCLIP / "parser.py"
    options = {"dataset": str(pro_set.dataset), "scripts": str(scripts), "image_repository": IMAGE_REPOSITORY}
    fails = "import sys\nprint('cannot parse', file=sys.stderr)\nsys.exit(3)\n"
    truncates = "import sys\nopen(sys.argv[3], 'w').write('{\"tests\": [')\n"
    # A parser run on the host would find the dataset file; in the sandbox there is none.
    reads_host = f"import sys, json\njson.load(open({str(pro_set.dataset)!r}))\n"
    cases = {
        fails: "the parser wrote no output.json (the parser exited 3: cannot parse)",
        truncates: "the parser's output.json is malformed",
        reads_host: "the parser wrote no output.json",
    }
    for code, reason in cases.items():
        parser.write_text(code)
        bench = SWEbenchPro(
            SWEbenchProOptions(**options, instance_ids=[PYCLIP]), images=DockerImages(pro_client)
        )
        task = bench.tasks()[0]
        report = bench.grade(task, task.patch, backend, "unused", TIMEOUT_S)
        assert not report.resolved
        assert report.reason.startswith(f"not resolved: {reason}"), report.reason
        assert report.FAIL_TO_PASS.failure == task.FAIL_TO_PASS


def test_the_agents_code_cannot_write_the_parsers_output_or_the_parser(
    pro_bench: SWEbenchPro, pro_set: ProSet, backend: SandboxBackend, tmp_path: Path
) -> None:
    task = next(t for t in pro_bench.tasks() if t.instance_id == PYCLIP)
    graded = [*task.FAIL_TO_PASS, *task.PASS_TO_PASS]
    forge = f"""import json, os
_FAKE = {{"tests": [{{"name": name, "status": "PASSED"}} for name in {graded!r}]}}
for _folder in ("/clade/pro-out", "/clade/pro-logs", "/clade/pro", "/tmp"):
    try:
        os.makedirs(_folder, exist_ok=True)
        with open(os.path.join(_folder, "output.json"), "w") as _out:
            json.dump(_FAKE, _out)
        with open(os.path.join(_folder, "parser.py"), "w") as _parser:
            _parser.write("import json, sys\\njson.dump(%r, open(sys.argv[3], 'w'))\\n" % (_FAKE,))
    except OSError:
        pass
"""
    clip = (pro_set.repos["pyclip"].path / "clip.py").read_text()
    diff = diff_of(pro_set.repos["pyclip"].path, tmp_path, {"clip.py": forge + clip})
    report = pro_bench.grade(task, diff, backend, "unused", TIMEOUT_S)
    assert report.patch_applied and not report.resolved
    assert report.FAIL_TO_PASS.failure == task.FAIL_TO_PASS


def test_the_hidden_tests_win_over_the_agents_edits_of_test_files(
    pro_bench: SWEbenchPro, pro_set: ProSet, backend: SandboxBackend, tmp_path: Path
) -> None:
    task = next(t for t in pro_bench.tasks() if t.instance_id == PYCLIP)
    cheat = "import unittest\n\n\nclass ClipTest(unittest.TestCase):\n" + "".join(
        f"    def {name}(self) -> None:\n        pass\n\n"
        for name in ("test_inside", "test_below", "test_above")
    )
    diff = diff_of(pro_set.repos["pyclip"].path, tmp_path, {"tests/test_clip.py": cheat})
    report = pro_bench.grade(task, diff, backend, "unused", TIMEOUT_S)
    assert not report.resolved
    assert report.test_statuses["tests/test_clip.py | ClipTest.test_above"] == "FAILED"
    assert "tests/test_clip.py" in report.dropped_for_grading
    assert "changes to test files left out: tests/test_clip.py" in report.reason


def test_a_missing_image_names_itself(pro_set: ProSet, pro_client: Any, backend: SandboxBackend) -> None:
    options = SWEbenchProOptions(
        dataset=str(pro_set.dataset), scripts=str(RUN_SCRIPTS), image_repository="clade/absent-pro-images"
    )
    bench = SWEbenchPro(options, images=DockerImages(pro_client), offline=True)
    task = bench.tasks()[0]
    # Pulled by name when absent, like swebench's images; there is no registry here.
    with pytest.raises(PullFailed, match="clade/absent-pro-images:pyclip-"):
        bench.grade(task, "", backend, "unused", TIMEOUT_S)


def test_a_run_that_times_out_is_not_resolved(
    pro_set: ProSet, pro_client: Any, backend: SandboxBackend, tmp_path: Path
) -> None:
    scripts = tmp_path / "run_scripts"
    shutil.copytree(RUN_SCRIPTS, scripts)
    (scripts / PYCLIP / "run_script.sh").write_text("#!/bin/bash\necho started\nsleep 600\n")
    options = SWEbenchProOptions(
        dataset=str(pro_set.dataset),
        scripts=str(scripts),
        image_repository=IMAGE_REPOSITORY,
        instance_ids=[PYCLIP],
    )
    bench = SWEbenchPro(options, images=DockerImages(pro_client))
    task = bench.tasks()[0]
    report = bench.grade(task, task.patch, backend, "unused", 5)
    assert not report.resolved and report.tests_timed_out and report.tests_exit_code is None
    assert report.reason.startswith("the tests timed out after 5s")
    assert report.FAIL_TO_PASS.failure == task.FAIL_TO_PASS
