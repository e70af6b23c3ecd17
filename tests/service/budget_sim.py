"""A run at parallelism N whose jobs spend real metered money: the real driver over SQLite and a
git archive, each job's LLM calls through a real gateway (`MeteredChat`) to the scripted model
at a dear price, jobs of one tick run side by side in threads, each calling until refused.

Used by tests/service/test_budget_leases.py and perf/budget_overshoot.py (which also runs it on
an older checkout, to show the overshoot that leases remove).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from contracts.jobs import EvaluateJob, ImproveJob, Job
from contracts.records import EvaluationResult, EvaluationSubmission, UsageRecord
from service.db.models import LLMUsage
from service.results import record_evaluation
from tests.service.driver_world import T, World
from tests.service.helpers import make_patch
from worker.llm.metering import MeteredChat
from worker.llm.pricing import ModelPrice, PriceTable
from worker.llm.script import Script
from worker.llm.scripted import ScriptedServer
from worker.llm.upstream import OpenAICompatibleUpstream
from worker.usage import usage_records

# One call: about 26 prompt tokens and 250 reply tokens, about $0.053.
PRICES = PriceTable({"scripted*": ModelPrice(prompt=100.0, completion=200.0)})
SCRIPT: dict[str, Any] = {"version": 1, "model": "scripted", "default": {"content": "word " * 200}}
ASK = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "hello"}]


@dataclass(frozen=True)
class Outcome:
    max_usd: float | None
    max_tokens: int | None
    spent_usd: float
    spent_tokens: int
    worst_call_usd: float  # the dearest single call of the run
    worst_call_tokens: int
    jobs: int
    stop_reason: str | None

    @property
    def overshoot_usd(self) -> float:
        return self.spent_usd - (self.max_usd or self.spent_usd)

    @property
    def overshoot_tokens(self) -> int:
        return self.spent_tokens - (self.max_tokens or self.spent_tokens)


def simulate(
    root: Path,
    *,
    max_usd: float | None = None,
    max_tokens: int | None = None,
    parallelism: int = 4,
    calls_per_job: int = 12,
    deadline_s: float = 120.0,
) -> Outcome:
    world = World(root)
    budget: dict[str, Any] = {"max_children": 4}
    if max_usd is not None:
        budget["max_usd"] = max_usd
    if max_tokens is not None:
        budget["max_tokens"] = max_tokens
    run_id = world.start(stages=[{"tasks": T}], budget=budget, parallelism=parallelism)
    jobs = 0
    with ScriptedServer(Script.model_validate(SCRIPT)) as server:
        upstream = OpenAICompatibleUpstream(server.base_url, "sk-sim", timeout=10)
        try:
            until = time.monotonic() + deadline_s
            while world.run(run_id).status == "running":
                assert time.monotonic() < until, "the run did not end in time"
                world.driver.tick()
                improve, evaluate = world.outbox.take()
                sent: list[Job] = [*improve, *evaluate]
                jobs += len(sent)
                threads = [
                    threading.Thread(target=_work, args=(world, upstream, job, calls_per_job)) for job in sent
                ]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join(timeout=max(1.0, until - time.monotonic()))
        finally:
            upstream.close()
    with world.sessions() as session:
        usd, tokens, worst_usd, worst_tokens = session.execute(
            select(
                func.coalesce(func.sum(LLMUsage.cost_usd), 0.0),
                func.coalesce(func.sum(LLMUsage.prompt_tokens + LLMUsage.completion_tokens), 0),
                func.coalesce(func.max(LLMUsage.cost_usd), 0.0),
                func.coalesce(func.max(LLMUsage.prompt_tokens + LLMUsage.completion_tokens), 0),
            ).where(LLMUsage.run_id == run_id)
        ).one()
    return Outcome(
        max_usd=max_usd,
        max_tokens=max_tokens,
        spent_usd=float(usd),
        spent_tokens=int(tokens),
        worst_call_usd=float(worst_usd),
        worst_call_tokens=int(worst_tokens),
        jobs=jobs,
        stop_reason=world.run(run_id).stop_reason,
    )


def _work(world: World, upstream: OpenAICompatibleUpstream, job: Job, calls: int) -> None:
    """A worker's job: an agent that calls the model until refused, then its result."""
    purpose = "solve" if isinstance(job, EvaluateJob) else "improve"
    chat = MeteredChat(upstream, PRICES, purpose=purpose, budget=job.budget, pinned_model="scripted")
    for _ in range(calls):
        if chat.complete({"model": "scripted", "messages": ASK}).status != 200:
            break
    usage: list[UsageRecord] = usage_records(chat.calls)
    if isinstance(job, EvaluateJob):
        with world.sessions.begin() as session:
            submission = EvaluationSubmission(result=EvaluationResult(resolved=True), usage=usage)
            record_evaluation(session, evaluation_id=job.evaluation_id, submission=submission)
    elif isinstance(job, ImproveJob):
        old = (world.archive.git.read_file(job.parent_id, "x.txt") or b"").decode()
        patch = make_patch(old, f"{job.step_id}\n", path="x.txt")
        world.archive.create_child(step_id=job.step_id, patch=patch, usage=usage)
