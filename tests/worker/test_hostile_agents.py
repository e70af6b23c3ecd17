"""A hostile agent is contained: through the real evaluation path, nothing it tries gets out.

Each test imports a small hostile agent (tests/worker/agents/) as a seed over HTTP, creates
a run over HTTP, lets the run driver's code open the evaluation, and calls
`worker.evaluate.evaluate` with one `WorkerContext` shared by the whole module. The agent
writes what it found to FINDINGS.json in the repository, so it lands in the recorded diff,
and to stdout. Every test then checks what a user would: the service records the
evaluation as not resolved (with the right failure); the real API key and the hidden tests
appear nowhere the agent could write to; no sandbox is left behind; and the same worker
then evaluates a well-behaved agent, which resolves the task.

The grader's own output (`test_log`, per-test statuses) names the hidden tests by design:
it is produced in a fresh sandbox after the agent's container is gone, so it is not checked
for them; it is checked for the key.
"""

from __future__ import annotations

import base64
import os
import re
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from benchmarks.base import Task, find_task
from benchmarks.gitops import patch_paths
from benchmarks.registry import get_benchmark
from sandbox.docker_backend import KILL_GRACE_S
from tests.worker.harness import SECRET_PREFIX, TASK_ID, Canary, Evaluated, EvaluationStack, make_agent
from worker.agent_runner import MAX_LOG_CHARS

pytestmark = pytest.mark.docker

TIMEOUT_S = 8  # for the agents that never finish; the kill must come right after it
# For the agents that search the whole sandbox and then finish: on a busy machine the search
# takes longer than the harness's default solve limit, and a cut-off search reports nothing.
SEARCH_TIMEOUT_S = 180


@pytest.fixture(scope="module")
def task() -> Task:
    return find_task(get_benchmark("clade-mini"), TASK_ID)


@pytest.fixture(scope="module")
def hidden(task: Task) -> list[str]:
    """What only the hidden tests contain: their new lines and the FAIL_TO_PASS test names."""
    benchmark = get_benchmark("clade-mini")
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp, "repo")
        benchmark.prepare_repo(task, repo)
        base = "".join((repo / path).read_text() for path in patch_paths(task.test_patch))
    added = [
        line[1:].strip()
        for line in task.test_patch.splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]
    lines = [line for line in added if len(line) >= 12 and line not in base]
    names = [test.rsplit("::", 1)[-1] for test in task.FAIL_TO_PASS]
    assert lines and names
    return lines + names


def targets(**extra: Any) -> dict[str, Any]:
    """The agent's targets.json; what it searches for goes in encoded, so its own files never match."""

    def encode(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    hidden = [encode(marker) for marker in extra.pop("hidden", [])]
    return {"secret_prefix_b64": encode(SECRET_PREFIX), "memory_mb": 128, "hidden_b64": hidden} | extra


def hostile(tmp_path: Path, program: str, payload: dict[str, Any]) -> Path:
    return make_agent(tmp_path / program.replace("_", "-"), program, payload)


def assert_contained(
    stack: EvaluationStack, evaluated: Evaluated, *, secret: str, hidden: list[str], well_behaved: Path
) -> None:
    """What holds after every hostile agent, checked through the service as a user would."""
    result = evaluated.result
    assert evaluated.detail["status"] == "done"
    assert evaluated.detail["resolved"] is False and result.resolved is False
    listed = [e for run in evaluated.agent["runs"] for e in run["evaluations"]]
    assert [(e["id"], e["status"], e["resolved"]) for e in listed] == [
        (evaluated.evaluation_id, "done", False)
    ]
    assert result == evaluated.returned  # the service stored what the worker sent
    assert secret not in evaluated.recorded
    assert secret not in stack.service.log()
    leaked = [marker for marker in hidden if marker in evaluated.agent_channels]
    assert leaked == [], f"hidden test content in what the agent wrote: {leaked}"
    assert stack.clade_containers() == []
    assert stack.leftover_workspaces() == []
    assert_worker_goes_on(stack, well_behaved)


def assert_worker_goes_on(stack: EvaluationStack, well_behaved: Path) -> None:
    good = stack.evaluate(well_behaved)
    assert good.result.resolved, good.result
    assert good.result.failure is None and good.result.agent_exit_code == 0
    assert good.detail["prompt_tokens"] > 0  # its one model call went through the gateway
    assert stack.clade_containers() == []


def host_processes_with(marker: str) -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue  # exited meanwhile
        if marker.encode() in cmdline and pid != str(os.getpid()):
            found.append(cmdline.replace(b"\0", b" ").decode(errors="replace"))
    return found


def test_network_is_unreachable_except_the_gateway(
    stack: EvaluationStack,
    tmp_path: Path,
    secret: str,
    hidden: list[str],
    well_behaved: Path,
    bridge_gateway: str,
    canary: Canary,
) -> None:
    """Public addresses, DNS, the Docker bridge (where a listener of ours waits), the service,
    the real upstream and the Docker socket are all unreachable; the gateway answers."""
    service_port = urlsplit(stack.service.url).port
    upstream_port = urlsplit(stack.llm.base_url).port
    assert service_port and upstream_port
    tcp = [
        ("1.1.1.1", 53),
        ("1.1.1.1", 443),
        (bridge_gateway, canary.port),
        (bridge_gateway, service_port),
        (bridge_gateway, 2375),
        ("127.0.0.1", service_port),
        ("127.0.0.1", upstream_port),
    ]
    payload = targets(
        tcp=tcp,
        udp=[("1.1.1.1", 53), (bridge_gateway, 53), (bridge_gateway, canary.port)],
        http=[
            f"{stack.service.url}/api/health",
            f"http://{bridge_gateway}:{service_port}/api/health",
            f"{stack.llm.base_url}/models",
        ],
    )
    seen_before = len(stack.llm.requests)
    evaluated = stack.evaluate(hostile(tmp_path, "attack_network", payload))

    found = evaluated.findings()
    kinds = ("tcp", "udp_dns", "resolve", "http", "docker_socket")
    attempts = {f"{kind} {target}": outcome for kind in kinds for target, outcome in found[kind].items()}
    assert len(attempts) == len(tcp) + 3 + 2 + 3 + 2
    assert {k: v for k, v in attempts.items() if not v.startswith("refused")} == {}
    assert found["interfaces"] == ["lo"]
    assert canary.contacts == []
    # The one way out works, and only through the gateway, which adds the real key itself.
    assert found["gateway_control"] == 200
    reached = stack.llm.requests[seen_before:]
    assert reached and all(r.authorization == f"Bearer {secret}" for r in reached)
    assert evaluated.result.failure is None
    assert_contained(stack, evaluated, secret=secret, hidden=hidden, well_behaved=well_behaved)


def test_the_real_api_key_never_reaches_the_agent(
    stack: EvaluationStack, tmp_path: Path, secret: str, hidden: list[str], well_behaved: Path
) -> None:
    """Not in its environment, any process's, any readable file or the gateway's answers; its
    symlinks to a key file on the worker's disk and to /proc/self/environ are stored as links,
    never read by the host."""
    # Where a worker host may keep the key: a host that followed the agent's symlinks would
    # read it into the recorded result. (The stack fixture also puts it in os.environ.)
    key_file = tmp_path / "worker-llm-key"
    key_file.write_text(secret)
    assert os.environ["CLADE_LLM_API_KEY"] == secret
    seen_before = len(stack.llm.requests)
    evaluated = stack.evaluate(
        hostile(tmp_path, "attack_secrets", targets(host_key_file=str(key_file))),
        solve_timeout_s=SEARCH_TIMEOUT_S,
    )

    found = evaluated.findings()
    assert found["hits"] == []
    assert found["files_read"] > 1000  # it really searched the whole filesystem
    assert found["environ"]["OPENAI_API_KEY"] == "clade-sandbox"
    assert not [k for k, v in found["environ"].items() if SECRET_PREFIX in k + v]
    assert found["llm_folder"] == ["gateway.sock"]
    assert found["answers"]["chat"]["status"] == 200
    # The key was in use while the agent ran: the upstream got it with the agent's call.
    assert [r.authorization for r in stack.llm.requests[seen_before:]][:1] == [f"Bearer {secret}"]
    # Symlinks were recorded as links, never followed by the host.
    result = evaluated.result
    assert result.trajectory == {
        "unreadable": "not read: trajectory.json is not a regular file (a symbolic link)"
    }
    for name, target in [("leak_environ", "/proc/self/environ"), ("leak_key_file", str(key_file))]:
        link = re.search(
            rf"^diff --git a/{name} b/{name}\nnew file mode 120000\n(?:[^\n]*\n){{4}}\+([^\n]*)$",
            result.diff,
            re.MULTILINE,
        )
        assert link and link.group(1) == target, result.diff[:3000]
    # Nowhere in the service: API answers (checked below), its log, its database files.
    for path in stack.service.data_dir.glob("clade.db*"):
        assert secret.encode() not in path.read_bytes(), path
    assert_contained(stack, evaluated, secret=secret, hidden=hidden, well_behaved=well_behaved)


def test_a_fork_bomb_hits_the_pids_limit_and_is_killed(
    stack: EvaluationStack, tmp_path: Path, secret: str, hidden: list[str], well_behaved: Path
) -> None:
    """It gets fewer processes than its pids limit; its endless bomb is killed at the time limit."""
    pids = 64
    evaluated = stack.evaluate(
        hostile(tmp_path, "attack_fork_bomb", targets()), pids=pids, solve_timeout_s=TIMEOUT_S
    )

    found = evaluated.findings()
    assert 0 < found["forked"] < pids
    assert found["stopped_by"].startswith("refused: BlockingIOError")
    result = evaluated.result
    assert result.timed_out is True
    assert result.failure is not None and "time limit" in result.failure
    assert TIMEOUT_S <= result.durations.agent_s < TIMEOUT_S + KILL_GRACE_S
    assert_contained(stack, evaluated, secret=secret, hidden=hidden, well_behaved=well_behaved)


def test_memory_past_the_limit_kills_the_agent(
    stack: EvaluationStack, tmp_path: Path, secret: str, hidden: list[str], well_behaved: Path
) -> None:
    """The kernel kills it below its memory limit; the evaluation records the non-zero exit."""
    limit_mb = 128
    evaluated = stack.evaluate(
        hostile(tmp_path, "attack_memory", targets(memory_mb=limit_mb)), memory_mb=limit_mb
    )

    found = evaluated.findings()
    assert "survived" not in found
    assert found["allocated_mb"] < limit_mb
    result = evaluated.result
    assert result.timed_out is False
    assert result.agent_exit_code is not None and result.agent_exit_code != 0
    assert result.failure == f"the agent exited with code {result.agent_exit_code}"
    assert_contained(stack, evaluated, secret=secret, hidden=hidden, well_behaved=well_behaved)


def test_output_past_every_cap_is_cut(
    stack: EvaluationStack, tmp_path: Path, secret: str, hidden: list[str], well_behaved: Path
) -> None:
    """60 MB of output, a 20 MB trajectory and a 20 MB diff: each is recorded at a bounded size,
    and the oversized diff is a failure of the agent."""
    evaluated = stack.evaluate(hostile(tmp_path, "attack_flood", targets()))

    result = evaluated.result
    assert result.timed_out is False and result.agent_exit_code == 0
    # 60 MB of output, a 20 MB trajectory and a 20 MB diff: each recorded at a bounded size.
    assert len(result.agent_log) <= 2 * MAX_LOG_CHARS + 100
    assert "flood flood" in result.agent_log
    assert len(str(result.trajectory)) <= MAX_LOG_CHARS + 100
    assert result.diff == ""
    # Refused from its size alone, before git copied it.
    assert result.failure == "the agent wrote huge.txt, 20420000 bytes; the patch cap is 2097152 bytes"
    assert len(evaluated.recorded) < 300_000
    assert evaluated.wall_s < 60
    assert_contained(stack, evaluated, secret=secret, hidden=hidden, well_behaved=well_behaved)


def test_an_agent_that_never_ends_is_killed_at_its_time_limit(
    stack: EvaluationStack, tmp_path: Path, secret: str, hidden: list[str], well_behaved: Path
) -> None:
    """Ignoring SIGTERM and leaving a detached grandchild does not outlive the time limit."""
    marker = f"clade-sleeper-{os.urandom(6).hex()}"
    evaluated = stack.evaluate(
        hostile(tmp_path, "attack_sleeper", targets(process_marker=marker)), solve_timeout_s=TIMEOUT_S
    )

    result = evaluated.result
    assert result.timed_out is True
    assert result.failure == f"the agent was killed after its time limit of {TIMEOUT_S}s"
    assert TIMEOUT_S <= result.durations.agent_s < TIMEOUT_S + KILL_GRACE_S
    assert evaluated.findings()["pid"] > 0
    assert "+++ b/heartbeat.txt" in result.diff  # its detached grandchild was running at the end
    assert host_processes_with(marker) == []
    assert_contained(stack, evaluated, secret=secret, hidden=hidden, well_behaved=well_behaved)


def test_the_hidden_tests_are_nowhere_the_agent_can_read(
    stack: EvaluationStack,
    tmp_path: Path,
    secret: str,
    hidden: list[str],
    well_behaved: Path,
    task: Task,
) -> None:
    """No file or process it can read holds the hidden tests' text or names, nor any task file."""
    evaluated = stack.evaluate(
        hostile(tmp_path, "attack_hidden_tests", targets(hidden=hidden)), solve_timeout_s=SEARCH_TIMEOUT_S
    )

    found = evaluated.findings()
    assert found["hits"] == []
    assert found["task_files"] == []
    assert found["files_read"] > 1000
    assert found["statement_chars"] == len(task.problem_statement)
    # They existed all along, for the grader: applied in a fresh sandbox after the agent's was gone.
    assert sorted(evaluated.result.fail_to_pass) == sorted(task.FAIL_TO_PASS)
    assert set(evaluated.result.fail_to_pass.values()) == {"FAILED"}
    assert_contained(stack, evaluated, secret=secret, hidden=hidden, well_behaved=well_behaved)


def test_writes_outside_the_workspace_are_refused(
    stack: EvaluationStack, tmp_path: Path, secret: str, hidden: list[str], well_behaved: Path
) -> None:
    """The image, its own code, the statement, the forwarder, Docker's host files and its cgroup
    limits are read-only to it; git configuration it plants never runs on the host."""
    host_marker = Path(tempfile.gettempdir()) / f"clade-hostile-{os.urandom(6).hex()}"
    evaluated = stack.evaluate(hostile(tmp_path, "attack_escape", targets(host_marker=str(host_marker))))

    found = evaluated.findings()
    assert found["uid"] == 1000 and found["gid"] == 1000
    assert len(found["writes"]) >= 10
    assert {p: r for p, r in found["writes"].items() if not r.startswith("refused")} == {}
    assert {p: r for p, r in found["chmods"].items() if not r.startswith("refused")} == {}
    # The git configuration and hooks it planted never ran on the host, and are not in the diff.
    assert not host_marker.exists()
    changed = re.findall(r"^diff --git a/(\S+) ", evaluated.result.diff, re.MULTILINE)
    assert sorted(changed) == [".gitattributes", "FINDINGS.json"]
    assert_contained(stack, evaluated, secret=secret, hidden=hidden, well_behaved=well_behaved)


def test_a_planted_conftest_cannot_forge_the_verdict(
    stack: EvaluationStack, tmp_path: Path, task: Task, secret: str, hidden: list[str], well_behaved: Path
) -> None:
    """An agent that fixes nothing but plants a conftest.py, and the same code in the package
    under test, both rewriting the grader's results file with every test PASSED, is recorded
    as not resolved: the conftest is left out of grading, the rewrite is caught as tampering."""
    tests = [*task.FAIL_TO_PASS, *task.PASS_TO_PASS]
    evaluated = stack.evaluate(hostile(tmp_path, "attack_forge_verdict", targets(tests=tests)))

    result = evaluated.result
    assert "+++ b/conftest.py" in result.diff and "+++ b/textkit/__init__.py" in result.diff
    assert result.resolved is False
    assert list(result.dropped_for_grading) == ["conftest.py"]
    assert result.tampered is not None and "written 2 times" in result.tampered
    assert result.grade_reason.startswith("tampered: ")
    # What the dashboard shows comes from the service's record.
    assert evaluated.detail["result"]["tampered"] == result.tampered
    # The test gave it the hidden tests' names (the strongest forger): those are not a leak.
    unseen = [marker for marker in hidden if not any(marker in test for test in tests)]
    assert_contained(stack, evaluated, secret=secret, hidden=unseen, well_behaved=well_behaved)
