"""A run's plan: its configuration validated once, into what the driver acts on.

This module is the one door to a run: the API, its preview and the simulator all validate a
configuration with `plan_run`, and `service.runs.create_run` stores only a plan. `plan_run`
checks everything a configuration needs before a run is stored (the benchmark loads with its
options, each stage has known tasks, the selection strategy takes its parameters, the time
limits fit the broker, a quarantine file reads and names known tasks) and raises
ConfigFieldError naming the field at fault; the API answers 422 at that path. Quarantined
tasks are kept out of every stage and held-out draw unless `quarantine.include` says otherwise.
The run stores the configuration and the stages' task ids (epoch 0's stages, then each
later epoch's own stages, in order: `RunPlan.stage_tasks`); `stored_plan` turns
them back into the same plan once per run and process, without loading the
benchmark again, so the driver never works from a dict.
"""

from __future__ import annotations

import random
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Protocol

from pydantic import ValidationError

from benchmarks.base import Benchmark, BenchmarkError, OptionError
from benchmarks.catalog import BenchmarkLoadPending
from contracts.benchmark_options import BenchmarkConfig, BenchmarkOptionError
from contracts.config import (
    MODEL_PURPOSES,
    BudgetConfig,
    ConfigFieldError,
    HeldoutConfig,
    ImproverConfig,
    JudgeConfig,
    LimitsConfig,
    ModelChoice,
    ModelsConfig,
    RunConfig,
    StageConfig,
)
from contracts.prices import ModelPrice, PriceTable
from contracts.quarantine import QuarantineFileError, load_quarantine
from service.db.models import Run
from service.selection import SelectionStrategy, UnknownStrategyError, make_strategy
from service.selection.evaluation import EvaluationPolicy
from service.selection.evaluation_registry import UnknownEvaluationPolicyError, make_evaluation_policy


class BenchmarkSource(Protocol):
    """Where a run's benchmark is loaded from: the service's `BenchmarkCatalog`, or the
    simulator's landscape."""

    def get(self, config: BenchmarkConfig) -> Benchmark: ...

    def spelled_out(self, config: BenchmarkConfig) -> BenchmarkConfig:
        """The configuration with every option spelled out, as a run stores it."""
        ...


@dataclass(frozen=True)
class StagePlan:
    task_ids: tuple[str, ...]
    threshold: float


@dataclass(frozen=True)
class EpochPlan:
    """One version of the run's utility: what an agent is scored on from `after_steps` on.

    Epoch 0 is the run's `stages` with test-based grading only (`after_steps` 0)."""

    number: int
    after_steps: int
    stages: tuple[StagePlan, ...]
    judge: JudgeConfig | None
    rescore_top_k: int
    own_stages: bool  # the epoch gave its own stage set (stored with the run), else kept the last


@dataclass(frozen=True)
class TimeLimits:
    """Celery's hard time limits of the run's jobs, in seconds."""

    improve_s: int
    evaluate_s: int


def improve_time_limit(limits: LimitsConfig) -> int:
    """Diagnosis, the improver's run and the child's validation."""
    return limits.improve_timeout_s + 2 * limits.test_timeout_s + limits.overhead_s


def evaluate_time_limit(limits: LimitsConfig) -> int:
    """The agent's run and the grading."""
    return limits.solve_timeout_s + limits.test_timeout_s + limits.overhead_s


@dataclass(frozen=True)
class RunPlan:
    config: RunConfig
    stages: tuple[StagePlan, ...]
    strategy: SelectionStrategy
    time_limits: TimeLimits
    epochs: tuple[EpochPlan, ...]  # epoch 0 first; one entry when the run has no epochs

    @property
    def benchmark(self) -> BenchmarkConfig:
        return self.config.benchmark

    @property
    def budget(self) -> BudgetConfig:
        return self.config.budget

    @property
    def limits(self) -> LimitsConfig:
        return self.config.limits

    @property
    def models(self) -> ModelsConfig:
        return self.config.models

    @property
    def improver(self) -> ImproverConfig:
        return self.config.improver

    @property
    def parallelism(self) -> int:
        return self.config.parallelism

    @property
    def rng_seed(self) -> int:
        return self.config.rng_seed

    @property
    def heldout(self) -> HeldoutConfig | None:
        """The held-out set (its `tasks` as chosen when the run was created), or None."""
        return self.config.evaluation.heldout

    @property
    def choose(self) -> str:
        """How the run reads selection results to name its best (`heldout.choose`): by selection
        score, or by the `family` or `tree` estimate; `score` without a held-out set."""
        return self.heldout.choose if self.heldout is not None else "score"

    @property
    def trials(self) -> int:
        return self.config.evaluation.trials

    @property
    def stage_tasks(self) -> list[list[str]]:
        """The task ids of each stage, as the run stores them: epoch 0's stages, then the
        stages of each later epoch that has its own."""
        return [list(stage.task_ids) for epoch in self.epochs if epoch.own_stages for stage in epoch.stages]

    def epoch(self, number: int) -> EpochPlan:
        """The utility of epoch `number` (0: the run's stages)."""
        return self.epochs[number]

    @cached_property
    def evaluator(self) -> EvaluationPolicy:
        """How an agent is measured on a stage (`evaluation.policy`): built once per plan."""
        return make_evaluation_policy(self.config.evaluation)

    def improver_for(self, parent_id: str) -> str:
        """The agent that improves `parent_id`: the parent itself, or the fixed improver."""
        return self.improver.agent if self.improver.agent is not None else parent_id


def plan_run(
    config: RunConfig,
    *,
    catalog: BenchmarkSource,
    visibility_timeout_s: int,
    prices: PriceTable | None = None,
) -> RunPlan:
    """Validate `config` into a plan; raises ConfigFieldError naming the field at fault.

    `prices` is the service's price table (None: the built-in one); the run's own
    `models.prices` win over it. Cheap checks come first: loading the benchmark may read a
    large dataset.
    """
    strategy = _strategy(config)
    config = with_budget_defaults(config, strategy)
    _check_evaluation_policy(config)
    time_limits = check_time_limits(config.limits, visibility_timeout_s)
    _check_epochs(config)
    _check_checkpoints(config)
    config = price_models(config, prices or PriceTable.default())
    benchmark = load_benchmark(catalog, config.benchmark)
    # Stored with every option spelled out, as its benchmark's model reads them.
    config = config.model_copy(update={"benchmark": catalog.spelled_out(config.benchmark)})
    config = quarantined(config, benchmark)
    kept_out = kept_out_tasks(config)
    stages = _stages(benchmark, config.stages, field="stages", seed=str(config.rng_seed), kept_out=kept_out)
    own = [
        _stages(
            benchmark,
            epoch.stages,
            field=f"epochs.{i}.stages",
            seed=f"{config.rng_seed}:e{i + 1}",
            kept_out=kept_out,
        )
        if epoch.stages is not None
        else None
        for i, epoch in enumerate(config.epochs)
    ]
    epochs = _epochs(config, stages, own)
    if config.evaluation.heldout is not None:  # stored with the task ids it stands for
        staged = tuple(stage for epoch in epochs for stage in epoch.stages)
        heldout = config.evaluation.heldout.model_copy(
            update={
                "tasks": _heldout_tasks(config, benchmark, staged, kept_out),
                "subset": None,
                "sample": None,
            }
        )
        config = config.model_copy(
            update={"evaluation": config.evaluation.model_copy(update={"heldout": heldout})}
        )
    return RunPlan(config=config, stages=stages, strategy=strategy, time_limits=time_limits, epochs=epochs)


def with_budget_defaults(config: RunConfig, strategy: SelectionStrategy) -> RunConfig:
    """The configuration with the budget fields its strategy fills in (`hgm-paper`: HGM's 800
    evaluations) where the run gave none; the stored configuration shows them."""
    given = config.budget.model_fields_set
    filled = {name: value for name, value in strategy.budget_defaults().items() if name not in given}
    if not filled:
        return config
    budget = BudgetConfig.model_validate(config.budget.model_dump() | filled)
    return config.model_copy(update={"budget": budget})


def _check_evaluation_policy(config: RunConfig) -> None:
    try:
        make_evaluation_policy(config.evaluation)
    except UnknownEvaluationPolicyError as exc:
        raise ConfigFieldError("evaluation.policy", str(exc)) from exc


def configured_models(config: RunConfig) -> list[tuple[str, str]]:
    """(field, model name) of every model the run calls: each purpose's (a name, or a list of
    them in fallback order), then each epoch's judge."""
    found: list[tuple[str, str]] = []
    for purpose in MODEL_PURPOSES:
        found += _named(f"models.{purpose}", getattr(config.models, purpose))
    for index, epoch in enumerate(config.epochs):
        if epoch.judge is not None and epoch.judge.model is not None:
            found += _named(f"epochs.{index}.judge.model", epoch.judge.model)
    return found


def _named(field: str, choice: ModelChoice) -> list[tuple[str, str]]:
    """(field, name) of a model choice: the field itself for one name, `field.i` in a list."""
    if isinstance(choice, str):
        return [(field, choice)]
    return [(f"{field}.{index}", name) for index, name in enumerate(choice)]


def price_models(config: RunConfig, table: PriceTable) -> RunConfig:
    """`config` with the price of every model it calls in `models.prices` (the run's snapshot of
    the table), or ConfigFieldError at the first model with no price: a run must not spend
    money nobody can count (a local server is declared at 0)."""
    prices = table.layered(config.models.prices)
    snapshot: dict[str, ModelPrice] = dict(config.models.prices)
    for field, name in configured_models(config):
        price = prices.price(name)
        if price is None:
            raise ConfigFieldError(
                field,
                f"no price is known for the model {name!r}: give it in models.prices (USD per million"
                f" tokens, e.g. {{{name!r}: {{prompt: 0, completion: 0}}}} for a local server) or in"
                " the service's price table (CLADE_PRICE_TABLE_PATH)",
            )
        snapshot[name] = price
    return config.model_copy(update={"models": config.models.model_copy(update={"prices": snapshot})})


def _check_epochs(config: RunConfig) -> None:
    """Epochs begin in order, each before the run's last step (else it would never be used)."""
    previous = 0
    for index, epoch in enumerate(config.epochs):
        field = f"epochs.{index}.after_steps"
        if epoch.after_steps <= previous:
            raise ConfigFieldError(
                field, f"epochs must begin in order: {epoch.after_steps} is not after {previous}"
            )
        if epoch.after_steps >= config.budget.max_children:
            raise ConfigFieldError(
                field,
                f"{epoch.after_steps} is not below budget.max_children ({config.budget.max_children}):"
                " the epoch would begin after the run's last step",
            )
        previous = epoch.after_steps


def _check_checkpoints(config: RunConfig) -> None:
    """Checkpoints are fractions of a budget: the run needs one they can be fractions of."""
    budget = config.budget
    if config.evaluation.checkpoints and budget.max_evaluations is None and budget.max_usd is None:
        raise ConfigFieldError(
            "evaluation.checkpoints",
            "checkpoints are fractions of the budget: give budget.max_evaluations or budget.max_usd",
        )


def _epochs(
    config: RunConfig, stages: tuple[StagePlan, ...], own: list[tuple[StagePlan, ...] | None]
) -> tuple[EpochPlan, ...]:
    """Each epoch's utility: what it leaves out is kept from the epoch before."""
    epochs = [EpochPlan(0, 0, stages, None, 0, own_stages=True)]
    for index, (epoch, its_stages) in enumerate(zip(config.epochs, own, strict=True), start=1):
        last = epochs[-1]
        epochs.append(
            EpochPlan(
                number=index,
                after_steps=epoch.after_steps,
                stages=its_stages if its_stages is not None else last.stages,
                judge=_with_model(epoch.judge, config.models) if epoch.judge is not None else last.judge,
                rescore_top_k=epoch.rescore_top_k,
                own_stages=its_stages is not None,
            )
        )
    return tuple(epochs)


def _with_model(judge: JudgeConfig, models: ModelsConfig) -> JudgeConfig:
    """The judge with its model spelled out: its own, else the run's `models.judge`."""
    return judge if judge.model is not None else judge.model_copy(update={"model": models.judge})


def check_time_limits(limits: LimitsConfig, visibility_timeout_s: int) -> TimeLimits:
    """Refuse limits the broker cannot honour: a task still running when its visibility
    timeout ends would be delivered a second time."""
    time_limits = TimeLimits(improve_s=improve_time_limit(limits), evaluate_s=evaluate_time_limit(limits))
    hard = max(time_limits.improve_s, time_limits.evaluate_s)
    if hard >= visibility_timeout_s:
        raise ConfigFieldError(
            "limits",
            f"a task may run {hard}s (timeouts plus overhead_s), which is not below the broker's "
            f"visibility timeout of {visibility_timeout_s}s (CLADE_BROKER_VISIBILITY_TIMEOUT_S)",
        )
    return time_limits


def _strategy(config: RunConfig) -> SelectionStrategy:
    try:
        return make_strategy(config.selection.strategy, config.selection.params)
    except UnknownStrategyError as exc:
        raise ConfigFieldError("selection.strategy", str(exc)) from exc
    except ValidationError as exc:
        error = exc.errors()[0]
        path = ".".join(["selection.params", *(str(part) for part in error["loc"])])
        raise ConfigFieldError(path, error["msg"]) from exc


def load_benchmark(catalog: BenchmarkSource, config: BenchmarkConfig) -> Benchmark:
    """The benchmark, or ConfigFieldError at the option it cannot load with (at `benchmark.name`
    for a benchmark not registered or that cannot load, each wrong option in `issues`)."""
    try:
        return catalog.get(config)
    except BenchmarkLoadPending:
        raise  # not the configuration's fault: a 503 to retry
    except BenchmarkOptionError as exc:
        issues = [(("benchmark", *problem.loc), problem.message, problem.kind) for problem in exc.problems]
        first = exc.problems[0]
        field = ".".join(str(part) for part in issues[0][0])
        raise ConfigFieldError(field, first.message, issues=issues) from exc
    except OptionError as exc:
        raise ConfigFieldError(f"benchmark.options.{exc.field}", str(exc)) from exc
    except (BenchmarkError, OSError) as exc:
        raise ConfigFieldError("benchmark.options", f"{config.name} cannot load: {exc}") from exc


def _some(names: list[str], shown: int = 10) -> str:
    """The first names, and how many more: a refusal stays readable whatever the list's length."""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def quarantined(config: RunConfig, benchmark: Benchmark) -> RunConfig:
    """The configuration with `quarantine.tasks` listing every quarantined id (its file's and its
    own, in benchmark order), or ConfigFieldError at `quarantine.file` for a file that cannot be
    read, is not a quarantine file or is about another benchmark, and at the field naming an id
    the benchmark lacks."""
    quarantine = config.quarantine
    if quarantine is None:
        return config
    known = {task.instance_id for task in benchmark.tasks()}
    ids = list(quarantine.tasks)
    unknown = [task for task in dict.fromkeys(ids) if task not in known]
    if unknown:
        raise ConfigFieldError("quarantine.tasks", f"unknown task(s) of {benchmark.name}: {_some(unknown)}")
    if quarantine.file is not None:
        try:
            record = load_quarantine(Path(quarantine.file))
        except QuarantineFileError as exc:
            raise ConfigFieldError("quarantine.file", str(exc)) from exc
        if record.benchmark != config.benchmark.name:
            raise ConfigFieldError(
                "quarantine.file",
                f"{quarantine.file} is a quarantine of {record.benchmark!r},"
                f" not of {config.benchmark.name!r}",
            )
        unknown = [task for task in record.tasks if task not in known]
        if unknown:
            raise ConfigFieldError(
                "quarantine.file",
                f"{quarantine.file} names task(s) {benchmark.name} does not have (checked with other"
                f" options?): {_some(unknown)}",
            )
        ids += list(record.tasks)
    chosen = set(ids)
    in_order = [task.instance_id for task in benchmark.tasks() if task.instance_id in chosen]
    return config.model_copy(update={"quarantine": quarantine.model_copy(update={"tasks": in_order})})


def kept_out_tasks(config: RunConfig) -> frozenset[str]:
    """The tasks the run keeps out of its stages and held-out draws: its quarantined tasks, unless
    `quarantine.include` keeps them in."""
    quarantine = config.quarantine
    if quarantine is None or quarantine.include:
        return frozenset()
    return frozenset(quarantine.tasks)


def _refuse_kept_out(field: str, ids: list[str], kept_out: frozenset[str]) -> None:
    """A stage or held-out set that names a quarantined task is refused: the run must choose."""
    named = [task for task in ids if task in kept_out]
    if named:
        raise ConfigFieldError(
            field,
            f"quarantined task(s) named: {_some(named)}; drop them, or keep quarantined tasks in with"
            " quarantine.include: true",
        )


def _stages(
    benchmark: Benchmark,
    configs: list[StageConfig],
    *,
    field: str,
    seed: str,
    kept_out: frozenset[str] = frozenset(),
) -> tuple[StagePlan, ...]:
    """A stage set's task ids, without the `kept_out` ones; errors name `field`.<index>. Samples
    draw with `seed`:<index> from what is left."""
    all_ids = [task.instance_id for task in benchmark.tasks()]
    known = set(all_ids)
    subsets = benchmark.subsets()
    stages: list[StagePlan] = []
    for index, stage in enumerate(configs):
        if stage.tasks is not None:
            unknown = list(dict.fromkeys(task for task in stage.tasks if task not in known))
            if unknown:
                raise ConfigFieldError(
                    f"{field}.{index}.tasks", f"unknown task(s) of {benchmark.name}: {_some(unknown)}"
                )
            ids = list(dict.fromkeys(stage.tasks))
            _refuse_kept_out(f"{field}.{index}.tasks", ids, kept_out)
        elif stage.subset is not None:
            if stage.subset not in subsets:
                names = ", ".join(sorted(subsets))
                raise ConfigFieldError(
                    f"{field}.{index}.subset", f"{benchmark.name} has no subset {stage.subset!r} ({names})"
                )
            ids = [task for task in subsets[stage.subset] if task not in kept_out]
        else:
            ids = [task for task in all_ids if task not in kept_out]
        if stage.sample is not None:
            ids = draw_sample(ids, stage.sample, seed=f"{seed}:{index}")
        if not ids:
            left = " once the quarantined tasks are kept out" if kept_out else ""
            raise ConfigFieldError(f"{field}.{index}", f"the stage has no tasks{left}")
        stages.append(StagePlan(task_ids=tuple(ids), threshold=stage.threshold))
    return tuple(stages)


def _heldout_tasks(
    config: RunConfig, benchmark: Benchmark, stages: tuple[StagePlan, ...], kept_out: frozenset[str]
) -> list[str]:
    """The held-out task ids: given, a subset, or every task no stage uses, never a `kept_out` one;
    refused if a stage uses one."""
    heldout = config.evaluation.heldout
    assert heldout is not None
    field = "evaluation.heldout"
    all_ids = [task.instance_id for task in benchmark.tasks()]
    staged = {task for stage in stages for task in stage.task_ids}
    if heldout.tasks is not None:
        field += ".tasks"
        unknown = [task for task in heldout.tasks if task not in set(all_ids)]
        if unknown:
            raise ConfigFieldError(field, f"unknown task(s) of {benchmark.name}: {_some(unknown)}")
        ids = list(dict.fromkeys(heldout.tasks))
        _refuse_kept_out(field, ids, kept_out)
    elif heldout.subset is not None:
        field += ".subset"
        subsets = benchmark.subsets()
        if heldout.subset not in subsets:
            names = ", ".join(sorted(subsets))
            raise ConfigFieldError(field, f"{benchmark.name} has no subset {heldout.subset!r} ({names})")
        ids = [task for task in subsets[heldout.subset] if task not in kept_out]
    else:
        ids = [task for task in all_ids if task not in staged and task not in kept_out]
    overlap = [task for task in ids if task in staged]
    if overlap:
        raise ConfigFieldError(
            field, f"held-out tasks must not be used by any stage; these are: {_some(overlap)}"
        )
    if heldout.sample is not None:
        ids = draw_sample(ids, heldout.sample, seed=f"{config.rng_seed}:heldout")
    if not ids:
        raise ConfigFieldError(field, "no held-out tasks are left (every task is used by a stage)")
    if len(ids) < heldout.rounds:
        raise ConfigFieldError(field, f"{len(ids)} held-out tasks cannot be sent in {heldout.rounds} rounds")
    return ids


def draw_sample(task_ids: list[str], size: int, *, seed: str) -> list[str]:
    """A fixed random subset: the same seed always draws the same tasks, in benchmark order."""
    if size >= len(task_ids):
        return list(task_ids)
    chosen = set(random.Random(seed).sample(task_ids, size))
    return [task for task in task_ids if task in chosen]


class _PlanCache:
    """Plans of stored runs by run id; a run's configuration never changes once stored."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._plans: OrderedDict[str, RunPlan] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, run: Run) -> RunPlan:
        with self._lock:
            plan = self._plans.get(run.id)
            if plan is not None:
                self._plans.move_to_end(run.id)
                return plan
        plan = _rebuild(run)
        with self._lock:
            self._plans[run.id] = plan
            while len(self._plans) > self._size:
                self._plans.popitem(last=False)
        return plan


def _rebuild(run: Run) -> RunPlan:
    # Validated when the run was created; validating again only turns JSON back into types.
    config = RunConfig.model_validate(run.config)
    stored = iter(run.stage_tasks)

    def stages_of(configs: list[StageConfig]) -> tuple[StagePlan, ...]:
        return tuple(StagePlan(task_ids=tuple(next(stored)), threshold=stage.threshold) for stage in configs)

    stages = stages_of(config.stages)
    own = [stages_of(epoch.stages) if epoch.stages is not None else None for epoch in config.epochs]
    if next(stored, None) is not None:
        raise ValueError(f"run {run.id} stores more stages than its configuration has")
    return RunPlan(
        config=config,
        stages=stages,
        epochs=_epochs(config, stages, own),
        strategy=make_strategy(config.selection.strategy, config.selection.params),
        time_limits=TimeLimits(
            improve_s=improve_time_limit(config.limits), evaluate_s=evaluate_time_limit(config.limits)
        ),
    )


_stored = _PlanCache(size=1024)


def stored_plan(run: Run) -> RunPlan:
    """The plan of a stored run, built once per process from its configuration and stages."""
    return _stored.get(run)
