"""A recorded archive for the dashboard's browser tests, made through the service's own paths.

The seed is imported over HTTP and runs are created over HTTP; steps are opened with
`service.steps.open_step` as the driver does; children arrive through the worker endpoint
`POST /api/worker/steps/{id}/child`; evaluations are created and agents admitted or
rejected by the driver's own `service.driver.stages.advance` and `admit`, and their results arrive
through `POST /api/worker/evaluations/{id}/result`. The run driver itself is off, so the
archive holds exactly the plan below.

    python -m tests.web.recorded [--port 8421]    # serve it, to look at the dashboard by hand
"""

from __future__ import annotations

import argparse
import difflib
import io
import tarfile
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from contracts.records import EvaluationSubmission
from service.db.engine import make_engine, make_session_factory
from service.db.models import Evaluation, Run, RunAgent
from service.driver.stages import admit, advance
from service.lifecycle import EvaluationStatus, MemberStatus
from service.plan import stored_plan
from service.steps import open_step
from tests.servers import ServiceProcess, free_port, service_env, start_service
from tests.service.helpers import dispatched
from tests.web import outcomes

PROMPT = "agent/prompts/system.md"
SEED_FILES = {
    "agent.toml": 'name = "recorded-seed"\nsolve = "python -m agent"\n',
    "agent/__init__.py": "",
    "agent/__main__.py": "from agent.loop import main\n\nmain()\n",
    "agent/loop.py": "def main() -> None:\n    print('solving')\n",
    PROMPT: "You are a careful software engineer.\n\n## Rules\n- Read the code before changing it.\n",
}


def task(short: str) -> str:
    return f"clade-mini__{short}"


# Task ids rather than subsets: the recording stays the same when clade-mini grows.
FIRST_STAGE = [task(n) for n in ("textkit-1", "spanlib-1", "ledger-1", "calcpy-1", "textkit-2")]
SECOND_STAGE = [
    *FIRST_STAGE,
    *(
        task(n)
        for n in ("spanlib-2", "ledger-2", "calcpy-2", "textkit-3", "spanlib-3", "ledger-3", "calcpy-3")
    ),
]
STAGE_CONFIG = [{"tasks": FIRST_STAGE, "threshold": 0.4}, {"tasks": SECOND_STAGE}]


@dataclass(frozen=True)
class Plan:
    """One child: its parent, the rule it adds to its prompt, and which tasks it resolves."""

    label: str
    parent: str
    rule: str
    solves: frozenset[str]
    rejection: str | None = None  # failed validation: archived, never evaluated
    extra: tuple[str, str] | None = None  # (path, content) of a file it adds
    finished: bool = True  # False: left evaluating, with one result still to come
    tampered: frozenset[str] = frozenset()  # tasks whose results grading found forged


def _solves(*names: str) -> frozenset[str]:
    return frozenset(task(n) for n in names)


SEED_SOLVES = _solves("textkit-1", "spanlib-1", "ledger-2")
PLANS = [
    Plan("a", "seed", "Run the tests before you answer.", SEED_SOLVES | _solves("ledger-1", "calcpy-2")),
    Plan(
        "b",
        "seed",
        "Always import agent.helpers first.",
        SEED_SOLVES,
        rejection=(
            "validation: the child does not start: ModuleNotFoundError: No module named 'agent.helpers'"
        ),
    ),
    Plan("c", "seed", "Answer as fast as you can.", _solves("spanlib-1", "ledger-2")),
    Plan(
        "d",
        "a",
        "Reproduce the failure with a script first.",
        SEED_SOLVES | _solves("ledger-1", "calcpy-2", "calcpy-1", "textkit-3"),
        extra=("agent/repro.py", "def reproduce(task: str) -> str:\n    return f'python -c {task!r}'\n"),
    ),
    Plan("e", "a", "Keep diffs minimal.", SEED_SOLVES | _solves("ledger-1", "calcpy-2", "spanlib-2")),
    Plan(
        "f",
        "d",
        "Check edge cases: empty input, None, off-by-one.",
        SEED_SOLVES
        | _solves("ledger-1", "calcpy-2", "calcpy-1", "textkit-3", "textkit-2", "ledger-3", "spanlib-3"),
    ),
    Plan("g", "d", "Rewrite whole files instead of editing.", _solves("textkit-1")),
    Plan(
        "h", "e", "Prefer the standard library.", SEED_SOLVES | _solves("ledger-1", "calcpy-2", "spanlib-2")
    ),
    Plan("i", "f", "Explain the fix in a comment.", SEED_SOLVES | _solves("ledger-1"), finished=False),
]


@dataclass
class Recorded:
    """The archive as built: agent ids by plan label, and the run they live in."""

    service: ServiceProcess
    database_url: str
    run_id: str
    other_run_id: str
    ids: dict[str, str] = field(default_factory=dict)
    files: dict[str, dict[str, str]] = field(default_factory=dict)
    attempts: int = 0

    @property
    def best(self) -> str:
        return self.ids["f"]

    @contextmanager
    def session(self) -> Iterator[Session]:
        engine = make_engine(self.database_url)
        sessions: sessionmaker[Session] = make_session_factory(engine)
        try:
            with sessions() as session:
                yield session
        finally:
            engine.dispose()

    # -- steps and children ---------------------------------------------------------

    def open_step(self, parent_id: str) -> str:
        with self.session() as session:
            step = open_step(session, run_id=self.run_id, parent_id=parent_id)
            dispatched(step)  # sent to a worker: the `worker` client shows its secret
            session.commit()
            return step.id

    def add_child(self, plan: Plan) -> str:
        """One step of the run: a child of the plan's parent, then its evaluation."""
        parent = self.ids[plan.parent]
        files = dict(self.files[plan.parent])
        files[PROMPT] = files[PROMPT] + f"- {plan.rule}\n"
        if plan.extra is not None:
            files[plan.extra[0]] = plan.extra[1]
        step_id = self.open_step(parent)
        body = {
            "patch": unified_diff(self.files[plan.parent], files),
            "diagnosis": diagnosis_for(plan),
            "rejection": plan.rejection,
            "usage": [u.model_dump() for u in outcomes.step_usage(len(self.ids))],
        }
        with self.service.worker as worker:
            response = worker.post(f"/api/worker/steps/{step_id}/child", json=body)
        response.raise_for_status()
        child = str(response.json()["id"])
        self.ids[plan.label], self.files[plan.label] = child, files
        if plan.rejection is None:
            self.evaluate(child, plan.solves, hold_back=0 if plan.finished else 1, tampered=plan.tampered)
        return child

    def reject_step(self, parent_label: str, reason: str) -> None:
        """A step that ended without a child (not a node of the tree, but counted by the run)."""
        step_id = self.open_step(self.ids[parent_label])
        with self.service.worker as worker:
            worker.post(f"/api/worker/steps/{step_id}/reject", json={"reason": reason}).raise_for_status()

    # -- evaluation, as the driver does it -------------------------------------------

    def evaluate(
        self,
        agent_id: str,
        solves: frozenset[str],
        hold_back: int = 0,
        tampered: frozenset[str] = frozenset(),
    ) -> None:
        """Advance the agent stage by stage; `hold_back` results of its first batch stay pending."""
        while True:
            with self.session() as session:
                run = session.get(Run, self.run_id)
                member = session.get(RunAgent, (self.run_id, agent_id))
                assert run is not None and member is not None
                if member.status != MemberStatus.EVALUATING:
                    return
                verdict = advance(session, run, stored_plan(run), member)
                if verdict is not None:
                    admit(session, run, verdict)
                session.commit()
                pending = [
                    (e.id, e.task_id)
                    for e in session.scalars(
                        select(Evaluation).where(
                            Evaluation.run_id == self.run_id,
                            Evaluation.agent_id == agent_id,
                            Evaluation.status == EvaluationStatus.PENDING,
                        )
                    )
                ]
            if not pending:
                return  # results still outstanding: left as the plan asked
            send = pending[: len(pending) - hold_back]
            for evaluation_id, task_id in send:
                self.submit_result(evaluation_id, resolved=task_id in solves, tampered=task_id in tampered)
            if len(send) < len(pending):
                return

    def submit_result(self, evaluation_id: str, *, resolved: bool, tampered: bool = False) -> None:
        with self.session() as session:
            evaluation = session.get(Evaluation, evaluation_id)
            assert evaluation is not None
            task_id = evaluation.task_id
            dispatched(evaluation)
            session.commit()
        self.attempts += 1
        submission = EvaluationSubmission(
            result=outcomes.task_result(task_id, resolved=resolved, attempt=self.attempts, tampered=tampered),
            usage=outcomes.solve_usage(self.attempts),
        )
        with self.service.worker as worker:
            response = worker.post(
                f"/api/worker/evaluations/{evaluation_id}/result", json=submission.model_dump(mode="json")
            )
        response.raise_for_status()


def unified_diff(old: dict[str, str], new: dict[str, str]) -> str:
    parts: list[str] = []
    for path in sorted(set(old) | set(new)):
        before, after = old.get(path), new.get(path)
        if before == after:
            continue
        parts.extend(
            difflib.unified_diff(
                (before or "").splitlines(keepends=True),
                (after or "").splitlines(keepends=True),
                fromfile=f"a/{path}" if before is not None else "/dev/null",
                tofile=f"b/{path}",
            )
        )
    return "".join(parts)


def diagnosis_for(plan: Plan) -> str:
    return (
        f"The parent failed tasks where it stopped too early. Proposed change: {plan.rule} "
        "This should turn failing FAIL_TO_PASS tests into passing ones without new regressions."
    )


def seed_tar() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in SEED_FILES.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 946684800
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def build(service: ServiceProcess, database_url: str) -> Recorded:
    """Seed, a cancelled baseline run, and the main run with the children of PLANS."""
    with service.admin as admin:
        seed = admin.post(
            "/api/seeds", files={"file": ("seed.tgz", seed_tar())}, data={"name": "recorded-seed"}
        )
        seed.raise_for_status()
        seed_id = str(seed.json()["id"])
        baseline = admin.post(
            "/api/runs",
            json={
                "name": "baseline",
                "seed_agent": seed_id,
                "stages": STAGE_CONFIG,
                "budget": {"max_children": 0},
            },
        )
        baseline.raise_for_status()
        other_run_id = str(baseline.json()["id"])
        admin.post(f"/api/runs/{other_run_id}/cancel").raise_for_status()
        config = {
            "name": "lineage-demo",
            "seed_agent": seed_id,
            "stages": STAGE_CONFIG,
            "budget": {"max_children": 20, "max_usd": 2.0, "max_tokens": 2_000_000, "max_wall_time_s": 7200},
            "rng_seed": 3,
        }
        created = admin.post("/api/runs", json=config)
        created.raise_for_status()
    recorded = Recorded(
        service=service,
        database_url=database_url,
        run_id=str(created.json()["id"]),
        other_run_id=other_run_id,
    )
    recorded.ids["seed"], recorded.files["seed"] = seed_id, dict(SEED_FILES)
    recorded.evaluate(seed_id, SEED_SOLVES)
    for plan in PLANS:
        recorded.add_child(plan)
        if plan.label == "c":
            recorded.reject_step("a", "improver produced an empty patch")
    return recorded


def start(root: Path, port: int | None = None) -> tuple[ServiceProcess, str]:
    database_url = f"sqlite:///{root / 'clade.db'}"
    env = service_env(root / "data", database_url, port or free_port())
    return start_service(env), database_url


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve a recorded archive for the dashboard.")
    parser.add_argument("--port", type=int, default=8421)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="clade-recorded-") as tmp:
        service, url = start(Path(tmp), args.port)
        try:
            recorded = build(service, url)
            print(f"dashboard: {service.url}/runs/{recorded.run_id}")
            print(f"admin token: {service.secrets['admin_token']}")
            print("labels: " + ", ".join(f"{k}={v[:10]}" for k, v in recorded.ids.items()))
            while service.process.poll() is None:
                time.sleep(1)
        except KeyboardInterrupt:
            pass
        finally:
            service.stop()


if __name__ == "__main__":
    main()
