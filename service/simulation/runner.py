"""One simulated run, start to end: the real run driver over an in-memory SQLite database,
answered by the simulated worker, until its evaluation budget is spent.

The run is created as the API creates one: its `RunConfig` planned by `service.plan.plan_run`
(against the landscape's tasks, service/simulation/tasks.py), then stored by
`service.runs.create_run`. Each tick is the driver's own `drive(session, run, outbox)` in one
transaction, then the worker answers the outbox's jobs in another, as results arriving from
workers would be. The evaluation budget is exact: once the results recorded reach it, no further result is
recorded and the run is cancelled. After every tick the runner notes the evaluations done,
the true score of the agent the run would pick as its best, and the best true score in its
archive; at the end, the named best's held-out bounds and the best true score among the agents
its held-out phase chose to score, which tells where a pick below the archive's best was lost.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import create_engine, event, func, select
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import StaticPool

from contracts.config import HeldoutConfig, RunConfig
from contracts.events import HeldoutStarted, kind_of
from contracts.scores import heldout_interval
from contracts.settings import Settings
from service import events
from service.db.models import Base, Evaluation, Run, RunAgent, Step
from service.driver.heldout import phase_cost
from service.driver.jobs import Outbox
from service.driver.tick import drive
from service.lifecycle import EvaluationStatus, MemberStatus, RunStatus
from service.plan import plan_run
from service.queries import top_agents
from service.runs import change_state, create_run
from service.simulation.landscape import Landscape, LandscapeConfig, Mutation
from service.simulation.presets import Preset
from service.simulation.tasks import LandscapeCatalog
from service.simulation.worker import BYTES_PER_TASK, SimulatedWorker

MAX_IDLE_TICKS = 50  # ticks in a row with no job and no change: the run is stuck (a bug)
# Steps are free here, so a landscape whose edits almost never make a child that needs evaluating
# (nearly all no-ops or invalid) would step for ever without reaching its budget. A run stops
# after this many steps per evaluation of its budget, short of it; on the built-in landscapes no
# preset takes more than 0.4.
MAX_STEPS_PER_EVALUATION = 2
# Job time limits are checked as a service with the default settings checks them.
VISIBILITY_TIMEOUT_S: int = Settings.model_fields["broker_visibility_timeout_s"].default


class SimulationStuckError(RuntimeError):
    pass


@dataclass(frozen=True)
class Sample:
    evaluations: int
    steps: int
    picked: float  # true score of the agent the run would pick now
    best: float  # best true score among its admitted agents


@dataclass
class SimResult:
    preset: str
    landscape: str
    seed: int
    budget: int
    seed_score: float
    samples: list[Sample] = field(default_factory=list)
    evaluations: int = 0  # results the worker answered
    done_in_database: int = 0  # done evaluations the database holds at the end
    # Done evaluations of agents whose code (tree) equals an earlier agent's in the run: what
    # reusing results of identical code would have saved.
    reused: int = 0  # evaluations copied from identical code instead of run (free)
    steps: int = 0
    mutations: dict[str, int] = field(default_factory=dict)
    ticks: int = 0
    seconds: float = 0.0
    cost_usd: float = 0.0  # the dollars the simulated worker reported for its evaluations
    task_seconds: float = 0.0  # their wall time, as reported
    cost_in_database: float = 0.0  # the dollars the database's evaluations hold
    # The named best's held-out Wilson bounds and true score at the end (None: never held out).
    heldout_bounds: tuple[float, float] | None = None
    # The best true score among the agents the held-out phase chose to score (None: it never
    # started): below `final.best`, the choice of candidates lost; below it, the held-out pick did.
    candidates_best: float | None = None

    def at(self, evaluations: int) -> Sample:
        """The last sample taken with at most `evaluations` done (the seed's before any)."""
        chosen = Sample(0, 0, self.seed_score, self.seed_score)
        for sample in self.samples:
            if sample.evaluations > evaluations:
                break
            chosen = sample
        return chosen

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SimResult:
        samples = [Sample(**sample) for sample in data.pop("samples")]
        bounds = data.pop("heldout_bounds", None)
        return cls(**data, samples=samples, heldout_bounds=tuple(bounds) if bounds else None)

    @property
    def final(self) -> Sample:
        return self.samples[-1] if self.samples else Sample(0, 0, self.seed_score, self.seed_score)


def memory_sessions() -> sessionmaker[Session]:
    """A private in-memory SQLite database with the archive's schema (foreign keys enforced)."""
    engine = create_engine("sqlite://", poolclass=StaticPool, connect_args={"check_same_thread": False})

    def _foreign_keys(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.execute("PRAGMA foreign_keys=ON")

    event.listen(engine, "connect", _foreign_keys)
    Base.metadata.create_all(engine)
    return sessionmaker(engine, expire_on_commit=False)


def stage_tasks(landscape: Landscape, preset: Preset, seed: int) -> list[list[str]]:
    """Each stage's tasks, drawn from the pool without overlap (the same for every preset of a seed
    whose stages have the same sizes)."""
    needed = preset.tasks_needed()
    pool = landscape.task_ids
    if needed > len(pool):
        raise ValueError(f"preset {preset.name} needs {needed} tasks; the pool has {len(pool)}")
    order = random.Random(f"stages:{seed}").sample(pool, len(pool))
    stages, start = [], 0
    for stage in preset.stages:
        stages.append(order[start : start + stage.size])
        start += stage.size
    if preset.heldout is not None:  # the next tasks of the same order: never used by a stage
        stages.append(order[start : start + preset.heldout[0]])
    return stages


def own_budget(preset: Preset, budget: int) -> int:
    """The evaluations `preset` may spend of a comparison's budget (half for a `/2` preset)."""
    return round(budget * preset.budget_share)


def max_children(preset: Preset, budget: int) -> int:
    """The most children a run of `preset` may make at `budget` (its `max_children` limit)."""
    return MAX_STEPS_PER_EVALUATION * max(1, own_budget(preset, budget))


def memory_bound(preset: Preset, land: LandscapeConfig, budget: int) -> int:
    """Bytes a run may keep for its agents' hidden chances at most: one double per task a child."""
    return (max_children(preset, budget) + 1) * land.tasks * BYTES_PER_TASK


def no_room_to_search(preset: Preset, budget: int) -> str | None:
    """Why `preset` would make no child at `budget` (its held-out phase and the steps in flight
    take its whole share), or None when it has room for at least one child's first stage."""
    if preset.heldout is None:
        return None
    tasks, top_k = preset.heldout
    phase = HeldoutConfig(tasks=[f"t{j}" for j in range(tasks)], top_k=top_k, rounds=preset.heldout_rounds)
    kept = phase_cost(phase, trials=1) + preset.margin()
    room = own_budget(preset, budget) - kept
    if room >= preset.stages[0].size:
        return None
    return (
        f"at --budget {budget} it gets {own_budget(preset, budget)} evaluations, and its held-out phase "
        f"and steps in flight keep {kept} of them: no room for a child (--budget "
        f"{math.ceil((kept + preset.stages[0].size) / preset.budget_share)} or more)"
    )


def run_config(preset: Preset, seed_agent: str, stages: list[list[str]], seed: int, budget: int) -> RunConfig:
    """The preset as a run configuration; `stages` ends with the held-out tasks if it has some."""
    limits: dict[str, Any] = {"max_children": max_children(preset, budget)}
    evaluation: dict[str, Any] = dict(preset.evaluation)
    if preset.heldout is not None:
        evaluation["heldout"] = {
            "tasks": stages[-1],
            "top_k": preset.heldout[1],
            "rounds": preset.heldout_rounds,
            "choose": preset.heldout_choose,
            "include_seed": preset.heldout_seed,
        }
        # Steps stop in time for the held-out phase and the steps in flight to fit the budget.
        limits["max_evaluations"] = max(1, own_budget(preset, budget) - preset.margin())
    elif preset.budget_in_config:
        limits["max_evaluations"] = own_budget(preset, budget)
    return RunConfig.model_validate(
        {
            "name": f"sim:{preset.name}:{seed}",
            "seed_agent": seed_agent,
            "stages": [
                {"tasks": tasks, "threshold": stage.threshold, **stage.options}
                for tasks, stage in zip(stages, preset.stages, strict=False)
            ],
            "selection": {"strategy": preset.strategy, "params": preset.params},
            "budget": limits,
            "evaluation": evaluation,
            "parallelism": preset.parallelism,
            "rng_seed": seed,
        }
    )


def simulate(preset: Preset, landscape_config: LandscapeConfig, seed: int, budget: int) -> SimResult:
    """Run `preset` on a landscape drawn with `seed` until `budget` evaluations are recorded."""
    started = time.perf_counter()
    landscape = Landscape(landscape_config, seed)
    worker = SimulatedWorker(landscape, seed)
    sessions = memory_sessions()
    with sessions.begin() as session:
        seed_agent = worker.add_seed(session)
        session.flush()
        stages = stage_tasks(landscape, preset, seed)
        config = run_config(preset, seed_agent, stages, seed, budget)
        plan = plan_run(
            config, catalog=LandscapeCatalog(landscape), visibility_timeout_s=VISIBILITY_TIMEOUT_S
        )
        run_id = create_run(session, plan=plan).id
    result = SimResult(
        preset=preset.name,
        landscape=landscape_config.name,
        seed=seed,
        budget=budget,
        seed_score=worker.truth[seed_agent].score,
    )
    watcher = _Watcher(run_id, worker)
    idle = 0
    limit = own_budget(preset, budget)  # a `/2` preset stops at half; its curve stays flat after
    while result.evaluations < limit:
        outbox = Outbox()
        with sessions.begin() as session:
            run = session.get(Run, run_id)
            if run is None or run.status != RunStatus.RUNNING:
                break
            drive(session, run, outbox)
        result.ticks += 1
        with sessions.begin() as session:
            for improve in outbox.improve:
                worker.improve(session, improve)
            # Results of distinct evaluations read nothing the others write: one flush for them all.
            # In an order of their own: the driver sends a tick's evaluations by creation time, ties
            # broken by random ids, and a run cut at its budget must answer the same ones every time.
            answered = sorted(outbox.evaluate, key=lambda job: (job.agent_id, job.task_id))
            with session.no_autoflush:
                for evaluate in answered[: limit - result.evaluations]:
                    worker.evaluate(session, evaluate)
                    result.evaluations += 1
        with sessions() as session:
            changed = watcher.observe(session, result)
        idle = 0 if (outbox.improve or outbox.evaluate or changed) else idle + 1
        if idle > MAX_IDLE_TICKS:
            raise SimulationStuckError(f"{preset.name} seed {seed}: no job for {idle} ticks")
    with sessions.begin() as session:
        run = session.get(Run, run_id)
        if run is not None and run.status == RunStatus.RUNNING:
            change_state(session, run_id=run_id, action="cancel")
    with sessions() as session:
        watcher.observe(session, result, force=True)
        result.heldout_bounds = watcher.heldout_bounds(session)
        result.candidates_best = watcher.candidates_best(session)
        done = session.execute(
            select(Evaluation.reused_from.is_(None), func.count())
            .where(Evaluation.run_id == run_id, Evaluation.status == EvaluationStatus.DONE)
            .group_by(Evaluation.reused_from.is_(None))
        ).all()
        counts = {bool(ran): int(n) for ran, n in done}
        # The budget counts evaluations run; copies of identical code's results cost nothing.
        result.done_in_database, result.reused = counts.get(True, 0), counts.get(False, 0)
        # What the worker reported reached the database (reused rows cost nothing).
        result.cost_in_database = math.fsum(
            cost or 0.0
            for cost in session.scalars(select(Evaluation.cost_usd).where(Evaluation.run_id == run_id))
        )
    result.mutations = {kind.value: worker.mutations[kind] for kind in Mutation}
    result.cost_usd, result.task_seconds = worker.cost_usd, worker.seconds
    result.seconds = time.perf_counter() - started
    return result


class _Watcher:
    """Notes a sample whenever the admitted agents or the evaluations done change."""

    def __init__(self, run_id: str, worker: SimulatedWorker) -> None:
        self.run_id = run_id
        self.worker = worker
        self.admitted = -1
        self.evaluations = -1
        # Until the seed is scored it is the run's only agent, so the one it would pick.
        self.picked = self.best = worker.truth[worker.seed_id].score

    def observe(self, session: Session, result: SimResult, *, force: bool = False) -> bool:
        admitted = (
            session.scalar(
                select(func.count())
                .select_from(RunAgent)
                .where(RunAgent.run_id == self.run_id, RunAgent.status == MemberStatus.ADMITTED)
            )
            or 0
        )
        if admitted == self.admitted and result.evaluations == self.evaluations and not force:
            return False
        if admitted != self.admitted or force:
            self.admitted = admitted
            self._rescore(session)
        self.evaluations = result.evaluations
        result.steps = (
            session.scalar(select(func.count()).select_from(Step).where(Step.run_id == self.run_id)) or 0
        )
        result.samples.append(Sample(result.evaluations, result.steps, self.picked, self.best))
        return True

    def heldout_bounds(self, session: Session) -> tuple[float, float] | None:
        """The named best's held-out interval, as the service shows it (None: it has none)."""
        named = top_agents(session, run_id=self.run_id, k=1)
        if not named:
            return None
        member = session.scalar(
            select(RunAgent).where(RunAgent.run_id == self.run_id, RunAgent.agent_id == named[0])
        )
        if member is None or not member.heldout_total:
            return None
        low, high = heldout_interval(member)
        assert low is not None and high is not None
        return low, high

    def candidates_best(self, session: Session) -> float | None:
        """The best true score among the agents the held-out phase chose (None: no phase began)."""
        started = events.first(session, run_id=self.run_id, kind=kind_of(HeldoutStarted))
        if started is None or not started.payload["agents"]:
            return None
        return max(self.worker.truth[agent_id].score for agent_id in started.payload["agents"])

    def _rescore(self, session: Session) -> None:
        members = session.execute(
            select(RunAgent.agent_id, RunAgent.resolved, RunAgent.attempted, RunAgent.step_number).where(
                RunAgent.run_id == self.run_id, RunAgent.status == MemberStatus.ADMITTED
            )
        ).all()
        if not members:
            return
        truth = self.worker.truth
        # The agent the run names as its best, by the service's own rule (`clade run show`): the
        # held-out lower bound where there is one, else the selection score.
        named = top_agents(session, run_id=self.run_id, k=1)
        if named:
            self.picked = truth[named[0]].score
        self.best = max(truth[row.agent_id].score for row in members)
