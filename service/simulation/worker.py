"""A simulated worker: answers the driver's jobs from the landscape, through the service's own
result functions (those the worker API calls), with no sandbox, model or git.

- An improve job draws a mutation of its parent. A child is recorded by `record_child` (the
  database half of `Archive.create_child`) under a synthetic 40-hex id and tree id; a no-op
  mutation keeps the parent's tree id, so identical code is visible as such. An invalid
  mutation is rejected through `reject_step`, as a worker reports a child that failed validation.
- An evaluate job is resolved with the landscape's chance of that agent on that task, recorded
  by `record_evaluation` with the task's cost (one metered call: its tokens and dollars) and
  wall time, as a real worker reports them.

Every random draw is keyed by the run seed and what it is about (step number; agent, task and
repeat), never by the order jobs arrive in, so a seed gives the same run every time.
"""

from __future__ import annotations

import hashlib
import math
import random
from array import array
from collections import Counter
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from contracts.jobs import EvaluateJob, ImproveJob
from contracts.records import Durations, EvaluationResult, EvaluationSubmission, UsageRecord
from service.archive.store import record_child
from service.db.models import Agent, Step
from service.results import record_evaluation, reject_step
from service.simulation.landscape import Landscape, Mutation, TaskCost

INVALID_REASON = "simulated: the child failed validation"


def synthetic_sha(*parts: object) -> str:
    return hashlib.sha1(":".join(str(p) for p in parts).encode()).hexdigest()


# What one task of one agent's hidden chances takes in memory (`clade sim` bounds a sitting by it).
BYTES_PER_TASK = array("d").itemsize


@dataclass
class AgentTruth:
    # Packed doubles, 8 bytes a task instead of a list's 32: a run keeps one vector per child.
    logits: array[float]
    score: float  # the true score: mean chance over the pool
    unlocked: bool = False  # descends from a stepping stone (large gains come more often)


@dataclass
class SimulatedWorker:
    landscape: Landscape
    seed: int
    truth: dict[str, AgentTruth] = field(default_factory=dict)
    mutations: Counter[Mutation] = field(default_factory=Counter)
    seed_id: str = ""
    _repeats: Counter[tuple[str, str]] = field(default_factory=Counter)

    # Summed exactly (fsum): the order in which a tick's jobs are answered may differ between
    # processes, and a run must give the same numbers whichever it was.
    @property
    def cost_usd(self) -> float:
        """What the evaluations answered cost, as reported."""
        return math.fsum(self._task_cost(t).usd * n for (_, t), n in self._repeats.items())

    @property
    def seconds(self) -> float:
        """Their wall time, as reported."""
        return math.fsum(self._task_cost(t).seconds * n for (_, t), n in self._repeats.items())

    def _task_cost(self, task_id: str) -> TaskCost:
        return self.landscape.cost[self._task(task_id)]

    @staticmethod
    def _task(task_id: str) -> int:
        return int(task_id.rsplit("-", 1)[1])

    def add_seed(self, session: Session) -> str:
        """The seed agent's row (as a seed import would write it, without git); its id."""
        logits = self.landscape.seed_logits()
        agent_id = synthetic_sha("seed", self.landscape.config.name, self.seed)
        self.truth[agent_id] = AgentTruth(array("d", logits), self.landscape.score(logits))
        self.seed_id = agent_id
        session.add(
            Agent(
                id=agent_id,
                parent_id=None,
                kind="seed",
                name="simulated seed",
                tree_id=synthetic_sha("tree", agent_id),
            )
        )
        return agent_id

    def improve(self, session: Session, job: ImproveJob) -> None:
        step = session.get(Step, job.step_id)
        if step is None:
            raise KeyError(f"step {job.step_id} not found")
        rng = random.Random(f"improve:{self.seed}:{step.number}")
        parent = self.truth[job.parent_id]
        draw = self.landscape.draw(rng, unlocked=parent.unlocked)
        self.mutations[draw.kind] += 1
        if draw.kind is Mutation.INVALID:
            reject_step(session, step_id=job.step_id, reason=INVALID_REASON)
            return
        child_id = synthetic_sha("agent", self.seed, step.number)
        if draw.kind is Mutation.NOOP:
            parent_row = session.get(Agent, job.parent_id)
            if parent_row is None:
                raise KeyError(f"agent {job.parent_id} not found")
            tree_id, truth = parent_row.tree_id, parent
        else:
            logits = self.landscape.mutate(parent.logits, draw, rng)
            unlocked = parent.unlocked or draw.kind is Mutation.STEPPING
            truth = AgentTruth(array("d", logits), self.landscape.score(logits), unlocked)
            tree_id = synthetic_sha("tree", child_id)
        self.truth[child_id] = truth
        record_child(
            session,
            step_id=job.step_id,
            child_id=child_id,
            tree_id=tree_id,
            manifest={},
            diagnosis=f"simulated mutation: {draw.kind}",
        )

    def evaluate(self, session: Session, job: EvaluateJob) -> None:
        key = (job.agent_id, job.task_id)
        repeat = self._repeats[key]
        self._repeats[key] += 1
        task = self._task(job.task_id)
        chance = self.landscape.chance(self.truth[job.agent_id].logits, task)
        rng = random.Random(f"evaluate:{self.seed}:{job.agent_id}:{job.task_id}:{repeat}")
        cost = self.landscape.cost[task]
        record_evaluation(
            session,
            evaluation_id=job.evaluation_id,
            submission=EvaluationSubmission(
                result=EvaluationResult(
                    resolved=rng.random() < chance,
                    durations=Durations(agent_s=cost.seconds, total_s=cost.seconds),
                ),
                usage=[
                    UsageRecord(
                        purpose="solve",
                        model="simulated",
                        prompt_tokens=cost.tokens,
                        completion_tokens=0,
                        cost_usd=cost.usd,
                    )
                ],
            ),
        )
