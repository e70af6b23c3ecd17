"""A worker's real evaluation path, end to end, for the worker tests and perf/evaluation_overhead.py.

A live service process (SQLite), agents imported as seeds over HTTP, a run created over
HTTP, its evaluation opened by one tick of the run driver's own code against the
service's database (the driver thread is off, so nothing else moves), and a
`WorkerContext` built in this process with `build_context`, pointing at that service
and at a scripted OpenAI-compatible server (labelled scripted; it demands the real
key). `EvaluationStack.evaluate` then calls `worker.evaluate.evaluate(ctx, job)` and
reads back what the service recorded. By default the run is on clade-mini's TASK_ID; a
stack (or one `evaluate` call) can name another benchmark, its options and a task.
"""

from __future__ import annotations

import json
import re
import shutil
import socketserver
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import SecretStr
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from contracts.jobs import EvaluateJob
from contracts.records import EvaluationResult
from contracts.settings import Settings
from sandbox.base import OWNER_LABEL
from sandbox.docker_backend import connect
from service.db.engine import make_engine, make_session_factory
from service.db.models import Run
from service.driver.jobs import Outbox
from service.driver.tick import drive
from tests.helpers import tar_of
from tests.servers import ServiceProcess, service_env, start_service
from worker.context import WorkerContext, build_context
from worker.evaluate import evaluate
from worker.llm.script import Match, Reply, Rule, Script
from worker.llm.scripted import ScriptedServer

TASK_ID = "clade-mini__textkit-1"
SECRET_PREFIX = "sk-real-secret-"
AGENTS_DIR = Path(__file__).with_name("agents")
FINDINGS_FILE = "FINDINGS.json"
# Small limits: every test waits for at most one of these timeouts.
DEFAULT_LIMITS: dict[str, Any] = {
    "solve_timeout_s": 20,
    "test_timeout_s": 60,
    "memory_mb": 512,
    "cpus": 1.0,
    "pids": 128,
    "max_agent_steps": 5,
}
SCRIPT = Script(
    model="scripted",
    rules=[
        Rule(
            name="fix-slugify",
            match=Match(last_user="slugify"),
            reply=Reply(content="(scripted) Make the character class greedy: [^a-z0-9]+"),
        )
    ],
    default=Reply(content="(scripted) no rule matched"),
)


def make_agent(dest: Path, program: str, targets: dict[str, Any] | None = None) -> Path:
    """An agent folder whose `solve` runs `agents/<program>.py` (with `probe.py` and `targets.json`)."""
    dest.mkdir(parents=True)
    (dest / "agent.toml").write_text(f'name = "{program}"\nsolve = "python -m attack"\n')
    shutil.copyfile(AGENTS_DIR / f"{program}.py", dest / "attack.py")
    if targets is not None:
        shutil.copyfile(AGENTS_DIR / "probe.py", dest / "probe.py")
        (dest / "targets.json").write_text(json.dumps(targets))
    return dest


class Canary:
    """TCP and UDP listeners on every host address, counting whoever reaches them."""

    def __init__(self) -> None:
        self.contacts: list[str] = []
        canary = self

        class TCPHandler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                canary.contacts.append(f"tcp from {self.client_address}")

        class UDPHandler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                canary.contacts.append(f"udp from {self.client_address}")

        self.tcp = socketserver.ThreadingTCPServer(("0.0.0.0", 0), TCPHandler)
        self.port = int(self.tcp.server_address[1])
        self.udp = socketserver.ThreadingUDPServer(("0.0.0.0", self.port), UDPHandler)
        for server in (self.tcp, self.udp):
            threading.Thread(target=server.serve_forever, daemon=True).start()

    def close(self) -> None:
        for server in (self.tcp, self.udp):
            server.shutdown()
            server.server_close()


@dataclass
class Evaluated:
    """One evaluation as the worker returned it and as the service recorded it."""

    agent_id: str
    run_id: str
    job: EvaluateJob
    returned: EvaluationResult
    detail: dict[str, Any]  # GET /api/agents/{id}/evaluations/{evaluation_id}
    agent: dict[str, Any]  # GET /api/agents/{id}
    wall_s: float

    @property
    def evaluation_id(self) -> str:
        return self.job.evaluation_id

    @property
    def result(self) -> EvaluationResult:
        """What the service stored (not what the worker returned)."""
        return EvaluationResult.model_validate(self.detail["result"])

    @property
    def recorded(self) -> str:
        """Every byte the service shows about this evaluation and its agent, as one text."""
        return json.dumps([self.detail, self.agent])

    @property
    def agent_channels(self) -> str:
        """The parts of the result the agent wrote: its diff, trajectory and log."""
        result = self.result
        return "\n".join([result.diff, json.dumps(result.trajectory), result.agent_log, result.failure or ""])

    def findings(self) -> dict[str, Any]:
        """What the hostile agent reported, read from the recorded diff (FINDINGS.json, one line)."""
        found = re.search(
            rf"^\+\+\+ b/{re.escape(FINDINGS_FILE)}\n@@[^\n]*\n\+(.*)$", self.result.diff, re.MULTILINE
        )
        assert found, f"the agent's findings are not in the recorded diff:\n{self.result.diff[:3000]}"
        data: dict[str, Any] = json.loads(found.group(1))
        return data


@dataclass
class EvaluationStack:
    service: ServiceProcess
    llm: ScriptedServer
    ctx: WorkerContext
    owner: str
    sessions: sessionmaker[Session]
    engine: Engine
    root: Path
    docker: Any
    benchmark: dict[str, Any] = field(default_factory=lambda: {"name": "clade-mini"})
    task_id: str = TASK_ID
    _agents: dict[Path, str] = field(default_factory=dict)

    def import_agent(self, folder: Path) -> str:
        """Import `folder` as a seed over HTTP (once per folder); return the agent id."""
        if folder not in self._agents:
            with self.service.admin as client:
                response = client.post(
                    "/api/seeds", files={"file": ("agent.tgz", tar_of(folder))}, data={"name": folder.name}
                )
            # 200: the same code is archived already (ids are the code's, whatever the folder's name).
            assert response.status_code in (200, 201), response.text
            self._agents[folder] = str(response.json()["id"])
        return self._agents[folder]

    def create_run(
        self,
        seed_id: str,
        limits: dict[str, Any],
        *,
        benchmark: dict[str, Any] | None = None,
        task_id: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> str:
        """A run of the seed on one task: `benchmark` ({name, options}) and `task_id`, or the stack's;
        `extra` adds to (or replaces) the run configuration's other top-level keys."""
        config = {
            "name": f"worker-test-{seed_id[:8]}",
            "seed_agent": seed_id,
            "benchmark": benchmark or self.benchmark,
            "stages": [{"tasks": [task_id or self.task_id]}],
            "limits": DEFAULT_LIMITS | limits,
            "budget": {"max_children": 1},
            "parallelism": 1,
        } | (extra or {})
        with self.service.admin as client:
            response = client.post("/api/runs", json=config)
        assert response.status_code == 201, response.text
        return str(response.json()["id"])

    def dispatch(self, run_id: str) -> EvaluateJob:
        """One tick of the run driver's code for this run: it opens the seed's evaluation."""
        outbox = Outbox()
        with self.sessions.begin() as session:
            run = session.get(Run, run_id)
            assert run is not None and run.status == "running"
            drive(session, run, outbox)
        assert len(outbox.evaluate) == 1, outbox
        return outbox.evaluate[0]

    def evaluate(
        self,
        folder: Path,
        *,
        benchmark: dict[str, Any] | None = None,
        task_id: str | None = None,
        **limits: Any,
    ) -> Evaluated:
        agent_id = self.import_agent(folder)
        run_id = self.create_run(agent_id, limits, benchmark=benchmark, task_id=task_id)
        job = self.dispatch(run_id)
        started = time.monotonic()
        returned = evaluate(self.ctx, job)
        wall_s = time.monotonic() - started
        with self.service.anonymous as client:
            detail = client.get(f"/api/agents/{agent_id}/evaluations/{job.evaluation_id}")
            agent = client.get(f"/api/agents/{agent_id}")
        assert detail.status_code == 200, detail.text
        assert agent.status_code == 200, agent.text
        return Evaluated(agent_id, run_id, job, returned, detail.json(), agent.json(), wall_s)

    def clade_containers(self) -> list[str]:
        """Containers of this worker (running or not): sandboxes and grading sandboxes alike."""
        found = self.docker.api.containers(all=True, filters={"label": f"{OWNER_LABEL}={self.owner}"})
        return [f"{c['Id'][:12]} {c['State']} {c['Labels']}" for c in found]

    def leftover_workspaces(self) -> list[Path]:
        work = self.ctx.work_dir
        return sorted(work.iterdir()) if work.exists() else []


@contextmanager
def evaluation_stack(
    root: Path,
    *,
    secret: str,
    owner: str,
    script: Script = SCRIPT,
    benchmark: dict[str, Any] | None = None,
    task_id: str = TASK_ID,
    service_settings: dict[str, str] | None = None,
) -> Iterator[EvaluationStack]:
    """Service, scripted model and worker context; everything is stopped and removed on exit.

    `script` drives the model; `benchmark` ({name, options}) and `task_id` are what runs
    are on unless an `evaluate` call names others (default: clade-mini, TASK_ID);
    `service_settings` are more CLADE_* settings for the service process.
    """
    with ExitStack() as stack:
        llm = stack.enter_context(ScriptedServer(script, api_key=secret))
        database = root / "service" / "clade.db"
        # A benchmark that loads slowly on a busy machine (swebench imports its harness) is waited
        # for, not refused: the wait ends as soon as it has loaded.
        settings_env = {"CLADE_BENCHMARK_LOAD_WAIT_S": "300"} | (service_settings or {})
        env = service_env(root / "service", f"sqlite:///{database}", 0, **settings_env)
        service = start_service(env)
        stack.callback(service.stop)
        engine = make_engine(f"sqlite:///{database}")
        stack.callback(engine.dispose)
        settings = Settings(
            data_dir=root / "worker",
            database_url=None,
            service_url=service.url,
            worker_token=SecretStr(service.secrets["worker_token"]),
            llm_base_url=llm.base_url,
            llm_api_key=SecretStr(secret),
            sandbox_backend="docker",
        )
        ctx = build_context(settings, owner=owner)
        stack.callback(ctx.client.close)
        stack.callback(ctx.backend.remove_orphans, owner)
        docker = connect()
        stack.callback(docker.close)
        yield EvaluationStack(
            service=service,
            llm=llm,
            ctx=ctx,
            owner=owner,
            sessions=make_session_factory(engine),
            engine=engine,
            root=root,
            docker=docker,
            benchmark=benchmark or {"name": "clade-mini"},
            task_id=task_id,
        )
