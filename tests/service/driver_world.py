"""A run driver over a real SQLite database and git archive, with an in-memory outbox for its jobs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from pydantic import SecretStr
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from benchmarks.catalog import BenchmarkCatalog
from contracts.config import RunConfig
from contracts.jobs import EvaluateJob, ImproveJob
from contracts.records import EvaluationResult, EvaluationSubmission, UsageRecord
from contracts.settings import Settings
from service.api.app import create_app
from service.archive.git_store import GitStore
from service.archive.store import Archive
from service.db.engine import make_engine, make_session_factory
from service.db.migrate import upgrade
from service.db.models import Evaluation, Run, RunAgent, Step
from service.driver.loop import RunDriver
from service.plan import plan_run
from service.results import record_evaluation
from service.runs import create_run
from tests.helpers import write_agent
from tests.service.helpers import make_patch

T = [f"clade-mini__{name}" for name in ("textkit-1", "spanlib-1", "ledger-1", "calcpy-1")]


class RecordingDispatcher:
    """Keeps the jobs the driver sends, for the test to answer."""

    def __init__(self) -> None:
        self.sent_improve: list[ImproveJob] = []
        self.sent_evaluate: list[EvaluateJob] = []

    def improve(self, job: ImproveJob) -> None:
        self.sent_improve.append(job)

    def evaluate(self, job: EvaluateJob) -> None:
        self.sent_evaluate.append(job)

    def take(self) -> tuple[list[ImproveJob], list[EvaluateJob]]:
        improve, evaluate = self.sent_improve, self.sent_evaluate
        self.sent_improve, self.sent_evaluate = [], []
        return improve, evaluate


API_TOKEN = "test-token"


@contextmanager
def service_over(data_dir: Path, database_url: str | None = None) -> Iterator[TestClient]:
    """The service over a world's database and archive (`data_dir`, or `database_url` when given),
    with no driver of its own: the test ticks the world's. One token for every role, sent on
    every request."""
    token = SecretStr(API_TOKEN)
    database = {} if database_url is None else {"database_url": database_url}
    settings = Settings(
        data_dir=data_dir,
        broker_url=None,
        run_driver_enabled=False,
        admin_token=token,
        worker_token=token,
        read_token=token,
        **database,
    )
    with TestClient(create_app(settings), headers={"Authorization": f"Bearer {API_TOKEN}"}) as client:
        yield client


class World:
    def __init__(self, root: Path, url: str | None = None) -> None:
        url = url or f"sqlite:///{root / 'clade.db'}"
        upgrade(url)
        self.url = url
        self.sessions: sessionmaker[Session] = make_session_factory(make_engine(url))
        self.archive = Archive(
            git=GitStore(root / "archive.git"), sessions=self.sessions, max_patch_bytes=10**6
        )
        self.seed = self.archive.import_seed_folder(write_agent(root / "seed", {"x.txt": "0\n"}))[0].id
        self.outbox = RecordingDispatcher()
        self.driver = RunDriver(sessions=self.sessions, dispatcher=self.outbox, interval_s=0.1)
        self.catalog = BenchmarkCatalog()
        self.version = 0

    def start(self, **overrides: Any) -> str:
        config = RunConfig.model_validate(
            {
                "seed_agent": self.seed,
                "stages": [{"tasks": T[:2], "threshold": 0.5}, {"tasks": T}],
                "selection": {"strategy": "best"},
                "budget": {"max_children": 2},
                "parallelism": 1,
            }
            | overrides
        )
        with self.sessions.begin() as session:
            plan = plan_run(config, catalog=self.catalog, visibility_timeout_s=10**6)
            return create_run(session, plan=plan).id

    def answer(
        self, job: EvaluateJob, resolved: bool, usd: float = 0.0, result: EvaluationResult | None = None
    ) -> None:
        usage = [UsageRecord(purpose="solve", model="m", prompt_tokens=10, completion_tokens=5, cost_usd=usd)]
        with self.sessions.begin() as session:
            record_evaluation(
                session,
                evaluation_id=job.evaluation_id,
                submission=EvaluationSubmission(
                    result=result or EvaluationResult(resolved=resolved), usage=usage
                ),
            )

    def make_child(self, job: ImproveJob, content: str | None = None) -> str:
        """A child of the job's parent whose x.txt reads `content` (default: a new number each time)."""
        self.version += 1
        old = self.archive.git.read_file(job.parent_id, "x.txt") or b""
        patch = make_patch(old.decode(), content or f"{self.version}\n", path="x.txt")
        return self.archive.create_child(step_id=job.step_id, patch=patch).id

    def lose_jobs(self, model: type[Step] | type[Evaluation]) -> None:
        """Every job of `model` sent so far goes unanswered past its time limit."""
        with self.sessions.begin() as session:
            for item in session.scalars(select(model)):
                item.dispatched_at = datetime.now(UTC) - timedelta(days=1)

    def member(self, run_id: str, agent_id: str) -> RunAgent:
        with self.sessions() as session:
            member = session.get(RunAgent, (run_id, agent_id))
            assert member is not None
            return member

    def run(self, run_id: str) -> Run:
        with self.sessions() as session:
            run = session.get(Run, run_id)
            assert run is not None
            return run
