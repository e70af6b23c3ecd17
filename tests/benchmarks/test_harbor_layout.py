"""Harbor task folders read strictly: what a task says, and a clear error naming the file for
each way a folder can be wrong; rewards read strictly from the verifier's folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchmarks.harbor import HarborBenchmark, HarborLayoutError, HarborOptions
from benchmarks.harbor.environment import context_digest, rewrite_dockerfile
from benchmarks.harbor.layout import read_task
from benchmarks.harbor.reward import read_reward
from benchmarks.harbor.verify import reaches_verifier_logs
from benchmarks.registry import BenchmarkRegistry
from contracts.benchmark_options import BenchmarkConfig, BenchmarkOptionError

FIXTURE = Path(__file__).parent / "harbor_fixture"


def copy_task(tmp_path: Path, name: str = "write-greeting") -> Path:
    dest = tmp_path / "tasks" / name
    shutil.copytree(FIXTURE / name, dest)
    return dest


def test_the_fixture_folder_loads_with_each_tasks_settings() -> None:
    benchmark = HarborBenchmark(HarborOptions(path=FIXTURE))
    by_id = {task.instance_id: task for task in benchmark.tasks()}
    assert sorted(by_id) == [
        "column-stats",
        "reward-never-written",
        "sum-program",
        "verifier-crashes",
        "write-greeting",
    ]
    greeting = by_id["write-greeting"]
    assert greeting.repo_path == "/app"
    assert greeting.problem_statement.startswith("Read the name in `/app/data/name.txt`")
    assert greeting.solve_timeout_s == 300.0
    assert greeting.image is not None and greeting.image.startswith("clade/harbor-write-greeting:")
    harbor = read_task(FIXTURE / "write-greeting")
    assert (harbor.memory_mb, harbor.cpus, harbor.verifier_timeout_s) == (1024, 1.0, 60.0)
    assert read_task(FIXTURE / "column-stats").memory_mb == 1024  # schema 1.1's memory_mb


def test_one_task_folder_is_a_benchmark_of_one(tmp_path: Path) -> None:
    task = copy_task(tmp_path)
    assert [t.instance_id for t in HarborBenchmark(HarborOptions(path=task)).tasks()] == ["write-greeting"]


def test_the_registry_builds_it_and_refuses_an_unknown_option() -> None:
    registry = BenchmarkRegistry.installed()
    built = registry.build(BenchmarkConfig(name="harbor", options={"path": str(FIXTURE)}))
    assert len(built.tasks()) == 5
    with pytest.raises(BenchmarkOptionError) as caught:
        registry.build(BenchmarkConfig(name="harbor", options={"path": str(FIXTURE), "pth": "x"}))
    assert "pth" in str(caught.value)


@pytest.mark.parametrize(
    ("breaks", "file", "message"),
    [
        (lambda t: (t / "instruction.md").unlink(), "instruction.md", "missing: the task's instruction"),
        (lambda t: (t / "instruction.md").write_text("  \n"), "instruction.md", "empty"),
        (lambda t: (t / "tests" / "test.sh").unlink(), "tests/test.sh", "missing: the task's verifier"),
        (lambda t: (t / "environment" / "Dockerfile").unlink(), "environment/Dockerfile", "docker_image"),
        (lambda t: (t / "task.toml").write_text("[agent\n"), "task.toml", "not valid TOML"),
        (
            lambda t: (t / "task.toml").write_text('[environment]\nmemory = "lots"\n'),
            "task.toml",
            "[environment].memory must be a size",
        ),
        (
            lambda t: (t / "task.toml").write_text("[verifier]\ntimeout_sec = -5\n"),
            "task.toml",
            "[verifier].timeout_sec must be a positive number",
        ),
        (
            lambda t: (t / "task.toml").write_text('[verifier.env]\nAPI_KEY = "${OPENAI_API_KEY}"\n'),
            "task.toml",
            "names a secret",
        ),
        (
            lambda t: (t / "task.toml").write_text('[[steps]]\nname = "one"\n'),
            "task.toml",
            "multi-step task",
        ),
        (
            lambda t: (t / "task.toml").write_text('[verifier]\nenvironment_mode = "separate"\n'),
            "task.toml",
            "separate environment",
        ),
    ],
)
def test_a_malformed_task_is_refused_naming_its_file(
    tmp_path: Path, breaks: object, file: str, message: str
) -> None:
    task = copy_task(tmp_path)
    breaks(task)  # type: ignore[operator]
    with pytest.raises(HarborLayoutError) as caught:
        HarborBenchmark(HarborOptions(path=tmp_path / "tasks"))
    assert caught.value.path == task / file
    assert message in str(caught.value)


def test_skip_unsupported_leaves_a_task_out_and_says_why(tmp_path: Path) -> None:
    copy_task(tmp_path, "write-greeting")
    multi = copy_task(tmp_path, "column-stats")
    (multi / "steps").mkdir()
    benchmark = HarborBenchmark(HarborOptions(path=tmp_path / "tasks", skip_unsupported=True))
    assert [task.instance_id for task in benchmark.tasks()] == ["write-greeting"]
    assert "multi-step task" in benchmark.skipped[str(multi)]


def test_a_folder_without_tasks_and_an_unknown_task_name_are_refused(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(HarborLayoutError, match="holds no Harbor task folder"):
        HarborBenchmark(HarborOptions(path=tmp_path / "empty"))
    with pytest.raises(HarborLayoutError, match="has no task nope"):
        HarborBenchmark(HarborOptions(path=FIXTURE, tasks=["write-greeting", "nope"]))


def test_a_named_image_replaces_the_build_and_the_workdir_comes_from_the_dockerfile(tmp_path: Path) -> None:
    task = copy_task(tmp_path)
    (task / "environment" / "Dockerfile").write_text("FROM python:3.12-slim\nWORKDIR /srv/work\n")
    (built,) = HarborBenchmark(HarborOptions(path=task)).tasks()
    assert built.repo_path == "/srv/work"
    (named,) = HarborBenchmark(HarborOptions(path=task, images={"write-greeting": "example/tb:1"})).tasks()
    assert named.image == "example/tb:1"


def test_from_lines_are_mapped_to_local_images_run_as_root() -> None:
    text = "FROM python:3.12-slim AS build\nRUN true\nFROM --platform=linux/amd64 ubuntu:24.04\n"
    rewritten = rewrite_dockerfile(text, {"python:3.12-slim": "clade/base:1", "ubuntu:24.04": "local/os:2"})
    assert rewritten == "FROM clade/base:1 AS build\nUSER root\nRUN true\nFROM local/os:2\nUSER root\n"
    assert rewrite_dockerfile(text, {}) == text


def test_the_image_digest_follows_every_file_of_the_context(tmp_path: Path) -> None:
    task = copy_task(tmp_path)
    context = task / "environment"
    before = context_digest(context, "FROM x\n")
    (context / "name.txt").write_text("Grace Hopper\n")
    assert context_digest(context, "FROM x\n") != before
    assert context_digest(context, "FROM y\n") != context_digest(context, "FROM x\n")


@pytest.mark.parametrize(
    ("files", "value", "problem"),
    [
        ({"reward.txt": "1\n"}, 1.0, ""),
        ({"reward.txt": "0.25"}, 0.25, ""),
        ({"reward.json": '{"reward": 0.5, "style": 1}'}, 0.5, ""),
        ({"reward.json": '{"accuracy": 0.75}'}, 0.75, ""),
        ({"reward.txt": "1", "reward.json": '{"reward": 1.0}'}, 1.0, ""),
        ({}, None, "wrote no reward.txt or reward.json"),
        ({"reward.txt": ""}, None, "does not hold a number"),
        ({"reward.txt": "yes"}, None, "does not hold a number"),
        ({"reward.txt": "nan"}, None, "not a reward between 0 and 1"),
        ({"reward.txt": "1.5"}, None, "not a reward between 0 and 1"),
        ({"reward.json": "{"}, None, "is not JSON"),
        ({"reward.json": "[1]"}, None, "must be a JSON object"),
        ({"reward.json": '{"a": 1, "b": 0}'}, None, "several rewards (a, b) and none named reward"),
        ({"reward.json": '{"reward": true}'}, None, "not a number"),
        (
            {"reward.txt": "1", "reward.json": '{"reward": 0}'},
            None,
            "reward.txt says 1 and reward.json says 0",
        ),
    ],
)
def test_rewards_are_read_strictly(
    tmp_path: Path, files: dict[str, str], value: float | None, problem: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    reward = read_reward(tmp_path)
    assert (reward.value, reward.forged) == (value, None)
    assert problem in reward.problem


def test_a_reward_file_that_is_a_symlink_is_no_reward(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").write_text("1")
    (tmp_path / "reward.txt").symlink_to(tmp_path / "elsewhere")
    assert read_reward(tmp_path).value is None


def test_a_full_reward_beside_a_ctrf_report_of_failures_is_forged(tmp_path: Path) -> None:
    (tmp_path / "reward.txt").write_text("1")
    report = {"results": {"summary": {"tests": 3, "passed": 2, "failed": 1}}}
    (tmp_path / "ctrf.json").write_text(json.dumps(report))
    assert "reports 1 failed test" in str(read_reward(tmp_path).forged)
    report["results"]["summary"]["failed"] = 0
    (tmp_path / "ctrf.json").write_text(json.dumps(report))
    assert read_reward(tmp_path).forged is None


def test_a_diff_naming_the_verifiers_reward_is_caught_and_an_honest_one_is_not() -> None:
    forged = "+++ b/run.py\n+open('/logs/verifier/reward.txt', 'w').write('1')\n"
    assert "verifier's /logs/verifier" in str(reaches_verifier_logs(forged))
    honest = "+++ b/greeting.txt\n+Hello, Ada Lovelace!\n-reward.txt in a removed line is fine\n"
    assert reaches_verifier_logs(honest) is None
