"""Harbor tasks graded for real in Docker: the fixture's environments (built before the suite by
scripts/test-images.sh), `clade bench check`'s oracle-passes / nothing-fails on each reward
shape and on broken verifiers, and forged rewards caught."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from benchmarks.base import BenchmarkError, GradeReport, find_task
from benchmarks.check import TaskCheck, check_benchmark
from benchmarks.gitops import git_ok
from benchmarks.harbor import HarborBenchmark, HarborOptions
from benchmarks.harbor.verify import EXITED_MARKER, RECORD_LOST, late_reward_writes, record_lost
from benchmarks.write_watch import Change, WriteWatch
from sandbox.base import SandboxBackend
from tests.images import HARBOR_FIXTURE, HARBOR_FROM, harbor_fixture

TIMEOUT_S = 120


@pytest.fixture(scope="module")
def harbor(docker_backend: tuple[SandboxBackend, str]) -> HarborBenchmark:
    benchmark: HarborBenchmark = harbor_fixture()
    return benchmark


@pytest.fixture(scope="module")
def checks(harbor: HarborBenchmark, docker_backend: tuple[SandboxBackend, str]) -> dict[str, TaskCheck]:
    backend, image = docker_backend
    return {check.instance_id: check for check in check_benchmark(harbor, backend, image, TIMEOUT_S)}


def grade(
    harbor: HarborBenchmark, backend: tuple[SandboxBackend, str], task_id: str, diff: str
) -> GradeReport:
    sandboxes, image = backend
    return harbor.grade(find_task(harbor, task_id), diff, sandboxes, image, TIMEOUT_S)


def new_file(path: str, text: str) -> str:
    lines = text.splitlines()
    body = "".join(f"+{line}\n" for line in lines)
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
        f"@@ -0,0 +1,{len(lines)} @@\n{body}"
    )


@pytest.mark.parametrize("task_id", ["write-greeting", "column-stats", "sum-program"])
def test_the_oracle_resolves_and_doing_nothing_does_not(checks: dict[str, TaskCheck], task_id: str) -> None:
    check = checks[task_id]
    assert check.ok, check.problems
    assert (check.gold.reward, check.empty.reward) == (1.0, 0.0)
    assert check.gold.reason.startswith("resolved: reward 1")


def test_a_crashing_verifier_and_one_that_writes_no_reward_fail_the_check(
    checks: dict[str, TaskCheck],
) -> None:
    crashed, silent = checks["verifier-crashes"], checks["reward-never-written"]
    assert not crashed.ok and not crashed.gold_resolves and not crashed.empty_resolves
    assert "the verifier exited with code 127" in crashed.gold.reason
    assert not silent.ok and not silent.gold_resolves
    assert "the verifier wrote no reward.txt or reward.json" in silent.gold.reason


def test_the_work_folder_of_the_image_is_the_agents_repository(
    harbor: HarborBenchmark, tmp_path: Path
) -> None:
    task = find_task(harbor, "write-greeting")
    sha = harbor.prepare_repo(task, tmp_path / "repo")
    assert (tmp_path / "repo" / "data" / "name.txt").read_text() == "Ada Lovelace\n"
    assert git_ok(tmp_path / "repo", "rev-parse", "HEAD").strip() == sha


def test_a_fractional_reward_is_kept_and_resolves_only_at_the_runs_pass_reward(
    harbor: HarborBenchmark, docker_backend: tuple[SandboxBackend, str]
) -> None:
    half = new_file("stats.json", '{"total": 47.75, "highest": 12}')
    report = grade(harbor, docker_backend, "column-stats", half)
    assert (report.resolved, report.reward) == (False, 0.5)
    assert report.reason == "not resolved: reward 0.5 (resolved at 1)"
    lenient = HarborBenchmark(
        HarborOptions(path=HARBOR_FIXTURE, base_images=harbor.options.base_images, pass_reward=0.5)
    )
    assert grade(lenient, docker_backend, "column-stats", half).resolved


def test_a_program_that_would_write_the_reward_after_the_verifier_exits_is_killed_first(
    harbor: HarborBenchmark, docker_backend: tuple[SandboxBackend, str]
) -> None:
    # A generic payload: the agent's program leaves a process behind that waits for the
    # verifier's shell (its parent's parent: the shell of `$(python3 ...)`'s test.sh) to end,
    # then writes a full reward; the path is spelled so that no line of the diff names it.
    forged = new_file(
        "total.py",
        "import os, time\n"
        "folder = os.path.join(os.sep, 'lo' + 'gs', 'veri' + 'fier')\n"
        "verifier = int(open(f'/proc/{os.getppid()}/stat').read().split(')')[1].split()[1])\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    for fd in (0, 1, 2):\n"
        "        os.close(fd)\n"
        "    deadline = time.monotonic() + 30\n"
        "    while os.path.exists(f'/proc/{verifier}') and time.monotonic() < deadline:\n"
        "        time.sleep(0.005)\n"
        "    open(os.path.join(folder, 'rew' + 'ard.txt'), 'w').write('1')\n"
        "    os._exit(0)\n"
        "print(0)\n",
    )
    report = grade(harbor, docker_backend, "sum-program", forged)
    assert not report.resolved
    if report.tampered is None:
        # Killed with everything else the verifier left: the verifier's own reward stands.
        assert (report.reward, report.reason) == (0.0, "not resolved: reward 0 (resolved at 1)")
    else:
        # It wrote between the verifier's exit and the sweep (a busy machine): seen as late.
        assert "was written after the verifier exited" in report.tampered, report.tampered


# More changes than the kernel queues for one watch (fs.inotify.max_queued_events), with room.
QUEUED = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
FLOOD = QUEUED + 1_000


def test_a_flood_of_changes_overflows_the_kernels_record_and_says_so(tmp_path: Path) -> None:
    with WriteWatch(tmp_path) as watch:
        # Two files in turn: the kernel merges a change only with an identical one just before it.
        with open(tmp_path / "a", "wb", buffering=0) as a, open(tmp_path / "b", "wb", buffering=0) as b:
            for _ in range(FLOOD // 2 + 1):
                a.write(b"x")
                b.write(b"x")
        (tmp_path / "reward.txt").write_text("1")  # lost: the queue is full
        changes = watch.changes()
    assert record_lost(changes)
    assert len(changes) <= QUEUED + 1 and "reward.txt" not in {c.name for c in changes}
    assert not record_lost(changes[:-1])


def test_a_right_program_that_floods_the_reward_folder_is_not_believed(
    harbor: HarborBenchmark, docker_backend: tuple[SandboxBackend, str]
) -> None:
    # A generic payload against the record of late writes: the agent's program, run by the
    # verifier, floods the reward folder so that the kernel drops what comes next (the marker, a
    # late reward). Its answer is right, yet the verdict cannot be trusted, so it fails closed.
    flooding = new_file(
        "total.py",
        "import os, sys\n"
        "folder = os.path.join(os.sep, 'lo' + 'gs', 'veri' + 'fier')\n"
        "a = open(os.path.join(folder, 'a'), 'wb', buffering=0)\n"
        "b = open(os.path.join(folder, 'b'), 'wb', buffering=0)\n"
        f"for _ in range({FLOOD // 2 + 1}):\n"
        "    a.write(b'x')\n"
        "    b.write(b'x')\n"
        "print(sum(int(line) for line in open(sys.argv[1]) if line.strip()))\n",
    )
    report = grade(harbor, docker_backend, "sum-program", flooding)
    assert (report.resolved, report.reason, report.reward) == (False, f"not resolved: {RECORD_LOST}", None)
    assert report.tampered is None


def test_a_diff_that_names_the_reward_file_is_tampered_without_running_the_verifier(
    harbor: HarborBenchmark, docker_backend: tuple[SandboxBackend, str]
) -> None:
    forged = new_file("total.py", "open('/logs/verifier/reward.txt', 'w').write('1')\nprint(45)\n")
    report = grade(harbor, docker_backend, "sum-program", forged)
    assert not report.resolved and report.tests_exit_code is None
    assert report.tampered is not None and "/logs/verifier" in report.tampered


def test_a_conftest_in_the_work_folder_is_left_out_of_grading(
    harbor: HarborBenchmark, docker_backend: tuple[SandboxBackend, str]
) -> None:
    greeting = new_file("greeting.txt", "Hello, Ada Lovelace!")
    report = grade(harbor, docker_backend, "write-greeting", greeting + new_file("conftest.py", "x = 1"))
    assert report.resolved
    assert list(report.dropped_for_grading) == ["conftest.py"]


def test_a_diff_that_does_not_apply_is_not_resolved(
    harbor: HarborBenchmark, docker_backend: tuple[SandboxBackend, str]
) -> None:
    broken = (
        "diff --git a/data/name.txt b/data/name.txt\n--- a/data/name.txt\n+++ b/data/name.txt\n"
        "@@ -1 +1 @@\n-Nobody\n+Someone\n"
    )
    report = grade(harbor, docker_backend, "write-greeting", broken)
    assert not report.resolved and not report.patch_applied


def test_a_dockerfile_that_needs_the_network_fails_naming_the_step(
    tmp_path: Path, docker_backend: tuple[SandboxBackend, str]
) -> None:
    backend, image = docker_backend
    task = tmp_path / "needs-network"
    shutil.copytree(HARBOR_FIXTURE / "write-greeting", task)
    (task / "environment" / "Dockerfile").write_text(
        "FROM python:3.12-slim\nRUN pip install --no-cache-dir requests==2.32.3\nWORKDIR /app\n"
    )
    benchmark = HarborBenchmark(HarborOptions(path=task, base_images={HARBOR_FROM: image}))
    (only,) = benchmark.tasks()
    with pytest.raises(BenchmarkError) as caught:
        benchmark.check_environment(only, backend)
    message = str(caught.value)
    assert "the environment of needs-network cannot be built here" in message
    assert "pip install --no-cache-dir requests==2.32.3" in message
    assert not backend.images.exists(str(only.image))


def test_a_from_image_the_engine_lacks_is_not_pulled(
    tmp_path: Path, docker_backend: tuple[SandboxBackend, str]
) -> None:
    backend, _image = docker_backend
    task = tmp_path / "unknown-base"
    shutil.copytree(HARBOR_FIXTURE / "write-greeting", task)
    (task / "environment" / "Dockerfile").write_text("FROM clade-test/never-built:1\nWORKDIR /app\n")
    benchmark = HarborBenchmark(HarborOptions(path=task))
    (only,) = benchmark.tasks()
    with pytest.raises(BenchmarkError, match="offline: no network, no pulls"):
        benchmark.check_environment(only, backend)


def test_a_reward_written_after_the_exit_marker_is_late_even_while_the_sweep_runs() -> None:
    verifier_wrote = [Change("reward.txt", "create"), Change("reward.txt", "close_write")]
    marker = [Change(EXITED_MARKER, "create"), Change(EXITED_MARKER, "delete")]
    forged = [Change("reward.txt", "modify"), Change("reward.txt", "close_write")]
    # All of it came before the verifier's command returned (the sweep was still running).
    changes = verifier_wrote + marker + forged
    assert late_reward_writes(changes, while_running=len(changes)) == ["reward.txt", "reward.txt"]
    assert late_reward_writes(verifier_wrote + marker, while_running=4) == []
    # No marker (the folder refused it): the command's return is the cut-off, as before.
    assert late_reward_writes(verifier_wrote + forged, while_running=2) == ["reward.txt", "reward.txt"]
