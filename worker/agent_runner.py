"""Run one agent on one repository inside a sandbox, with its own LLM gateway.

The agent's code, the repository and the statement go in through mounts; the
agent reaches the model only through the gateway's socket; what comes back is
the host's `git diff` of the repository, the trajectory file, and the calls the
gateway metered. Nothing the agent says about itself is trusted.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contracts.config import LimitsConfig
from contracts.manifest import AgentManifest
from contracts.prices import ModelPrice
from contracts.text import MAX_JSON_DEPTH, json_depth
from sandbox.base import ExecResult, Mount, SandboxError, SandboxSpec
from sandbox.disk import MiB
from sandbox.hostfiles import NotARegularFile
from sandbox.images.runtime import RUNTIME_DIR, RUNTIME_PYTHON
from worker.context import WorkerContext
from worker.llm import Budget, GatewayConfig, LLMCall, LLMGateway, forwarder_script_path
from worker.workspace import DiskLimitExceeded, PatchTooLarge, Workspace

FORWARDER_PORT = 8080
SOCKET = "/clade/llm/gateway.sock"
MAX_TRAJECTORY_BYTES = 5_000_000
MAX_LOG_CHARS = 20_000
MAX_NOTE_BYTES = 20_000
# Starts the forwarder with the runtime's python (isolated from the image's PYTHON*
# variables: the image's own python3 may be anything, or missing), waits until it
# listens, then replaces itself with the agent's command, which finds the runtime's venv
# first on PATH. The PATH for the task's own commands (the task's tool folders, then the
# image's PATH) stays in CLADE_IMAGE_PATH.
LAUNCH = f"""
"$CLADE_PYTHON" -I /clade/bin/forwarder.py --port {FORWARDER_PORT} --socket {SOCKET} \
  >/tmp/forwarder.log 2>&1 &
i=0
until grep -q listening /tmp/forwarder.log 2>/dev/null; do
  i=$((i+1))
  if [ "$i" -gt 200 ]; then
    echo "clade: the LLM forwarder did not start" >&2; cat /tmp/forwarder.log >&2; exit 97
  fi
  sleep 0.05
done
export CLADE_IMAGE_PATH="${{CLADE_TOOLS_PATH:+$CLADE_TOOLS_PATH:}}$PATH"
export PATH="${{CLADE_PYTHON%/*}}:$CLADE_IMAGE_PATH"
cd "$CLADE_REPO" && exec sh -c "$CLADE_SOLVE"
"""


@dataclass
class AgentRun:
    agent_code: bytes
    manifest: AgentManifest
    statement: str
    prepare_repo: Callable[[Path], object]  # writes a git work tree with one commit at the path
    repo_path: str
    model: str
    purpose: str  # "solve" | "improve": tags every metered call
    timeout_s: float
    limits: LimitsConfig
    budget: Budget
    image: str
    runtime: Path  # host folder of the agent runtime, mounted read-only at RUNTIME_DIR
    tools_path: list[str] = field(default_factory=list)  # folders first on PATH for the task
    labels: dict[str, str] = field(default_factory=dict)
    fallbacks: list[str] = field(default_factory=list)  # models tried after `model` (llm/fallback.py)
    # Hyper steps run the agent's `improve` command instead of `solve`, with more files next to the
    # statement (named to it in `env`) and a note of what it did read back from its output folder.
    command: str | None = None  # None: the manifest's `solve`
    task_files: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    note_file: str | None = None
    prices: Mapping[str, ModelPrice] = field(default_factory=dict)  # the run's, before the worker's table


@dataclass
class AgentOutcome:
    diff: str
    trajectory: Any
    log: str
    exit_code: int
    timed_out: bool
    calls: list[LLMCall]
    setup_s: float
    agent_s: float
    failure: str | None
    note: str | None = None  # the run's `note_file`, if it wrote one


def run_agent(ctx: WorkerContext, run: AgentRun) -> AgentOutcome:
    started = time.monotonic()
    settings = ctx.settings
    with Workspace(
        ctx.work_dir,
        settings.socket_dir,
        disk_limit_bytes=settings.sandbox_disk_mb * MiB,
        disk_enforcement=settings.sandbox_disk_enforcement,
    ) as ws:
        ws.unpack_agent(run.agent_code)
        run.prepare_repo(ws.repo)
        ws.write_statement(run.statement)
        for name, text in run.task_files.items():
            ws.write_task_file(name, text)
        ws.hand_over()
        gateway = LLMGateway(
            GatewayConfig(
                socket_path=ws.llm / "gateway.sock",
                purpose=run.purpose,
                model=run.model,
                fallbacks=run.fallbacks,
                budget=run.budget,
            ),
            ctx.upstream,
            ctx.prices.layered(run.prices),
            secrets=ctx.secrets,
        )
        assert ws.disk is not None
        with gateway, closing(ctx.backend.start(_spec(ws, run))) as sandbox:
            setup_s = time.monotonic() - started
            ws.disk.start(on_exceeded=sandbox.close)  # watch mode: the sandbox goes at the limit
            try:
                result = sandbox.exec(["sh", "-c", LAUNCH], timeout_s=run.timeout_s)
            except SandboxError:
                if not ws.disk.exceeded:
                    raise
                result = _stopped(time.monotonic() - started - setup_s)
            finally:
                ws.disk.stop_watching()
        agent_s = result.duration_s
        failure, disk_full = None, False
        try:
            diff = ws.diff(settings.max_patch_bytes)
        except PatchTooLarge as exc:
            diff, failure = "", str(exc)
        except DiskLimitExceeded as exc:
            diff, failure, disk_full = "", str(exc), True
        trajectory = _trajectory(_read_output(ws, "trajectory.json", MAX_TRAJECTORY_BYTES))
        note = None
        if run.note_file is not None:
            raw = _read_output(ws, run.note_file, MAX_NOTE_BYTES)
            if isinstance(raw, dict):
                note = raw["unreadable"]
            elif raw is not None:
                note = raw.decode(errors="replace").strip()
        calls = gateway.calls
        ctx.metrics.count_calls(calls)
    if disk_full:
        pass  # the reason, whatever the agent's exit status was (it failed to write, or was stopped)
    elif result.timed_out:
        failure = f"the agent was killed after its time limit of {run.timeout_s:g}s"
    elif result.exit_code != 0:
        failure = f"the agent exited with code {result.exit_code}"
    log = (result.stdout[-MAX_LOG_CHARS:] + ("\n--- stderr ---\n" + result.stderr[-MAX_LOG_CHARS:])).strip()
    return AgentOutcome(
        diff=diff,
        trajectory=trajectory,
        log=log,
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        calls=calls,
        setup_s=setup_s,
        agent_s=agent_s,
        failure=failure,
        note=note,
    )


def _stopped(duration_s: float) -> ExecResult:
    """The result of an agent whose sandbox was removed at its disk limit (watch mode)."""
    return ExecResult(exit_code=-9, stdout="", stderr="", duration_s=duration_s)


def _read_output(ws: Workspace, name: str, max_bytes: int) -> bytes | dict[str, str] | None:
    """The file's bytes; None if missing; {"unreadable": why} for a link, FIFO or device."""
    try:
        return ws.read_output(name, max_bytes)
    except NotARegularFile as exc:
        return {"unreadable": f"not read: {exc}"}


def _spec(ws: Workspace, run: AgentRun) -> SandboxSpec:
    return SandboxSpec(
        image=run.image,
        mounts=[
            Mount(source=ws.agent, target="/clade/agent", read_only=True),
            Mount(source=ws.repo, target=run.repo_path, read_only=False),
            Mount(source=ws.task, target="/clade/task", read_only=True),
            Mount(source=ws.out, target="/clade/out", read_only=False),
            Mount(source=ws.llm, target="/clade/llm", read_only=False),
            Mount(source=forwarder_script_path(), target="/clade/bin/forwarder.py", read_only=True),
            Mount(source=run.runtime, target=RUNTIME_DIR, read_only=True),
        ],
        # The run's own variables never replace these.
        env=run.env
        | {
            "OPENAI_BASE_URL": f"http://127.0.0.1:{FORWARDER_PORT}/v1",
            "OPENAI_API_KEY": "clade-sandbox",
            "CLADE_MODEL": run.model,
            "CLADE_TASK_FILE": "/clade/task/statement.md",
            "CLADE_REPO": run.repo_path,
            "CLADE_OUTPUT_DIR": "/clade/out",
            "CLADE_MAX_STEPS": str(run.limits.max_agent_steps),
            "CLADE_TIMEOUT_S": str(int(run.timeout_s)),
            "CLADE_SOLVE": run.command or run.manifest.solve,
            "CLADE_PYTHON": RUNTIME_PYTHON,
            "CLADE_TOOLS_PATH": ":".join(run.tools_path),
            "PYTHONPATH": "/clade/agent",
            "PYTHONDONTWRITEBYTECODE": "1",
            "HOME": "/tmp",
        },
        memory_mb=run.limits.memory_mb,
        cpus=run.limits.cpus,
        pids=run.limits.pids,
        # The agent runs its task's tests as the grader will, and Go, cargo and CMake run what
        # they build in /tmp; noexec would protect nothing here, the repository is writable and exec.
        tmpfs_exec=True,
        writable_limit_mb=0,  # its folders are on the workspace's LimitedDisk
        labels=run.labels,
    )


def _trajectory(raw: bytes | dict[str, str] | None) -> Any:
    if raw is None or isinstance(raw, dict):
        return raw
    unparsed = {"unparsed": raw[:MAX_LOG_CHARS].decode(errors="replace")}
    try:
        trajectory = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        return unparsed
    # Nested deeper than the service takes (inside its submission's result): kept as text, so the
    # evaluation is still recorded.
    return unparsed if json_depth(trajectory) + 2 > MAX_JSON_DEPTH else trajectory
