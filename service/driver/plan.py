"""A run's plan: its configuration validated once, into what the driver acts on.

`plan_run` checks everything a configuration needs before a run is stored (the
benchmark loads with its options, each stage has known tasks, the selection
strategy takes its parameters, the time limits fit the broker) and raises
ConfigFieldError naming the field at fault; the API answers 422 at that path.
The run stores the configuration and the stages' task ids; `stored_plan` turns
them back into the same plan once per run and process, without loading the
benchmark again, so the driver never works from a dict.
"""

from __future__ import annotations

import random
import threading
from collections import OrderedDict
from dataclasses import dataclass

from pydantic import ValidationError

from benchmarks.base import Benchmark, BenchmarkError, OptionError
from benchmarks.catalog import BenchmarkCatalog
from contracts.benchmark_options import BenchmarkConfig
from contracts.config import (
    BudgetConfig,
    ConfigFieldError,
    HeldoutConfig,
    ImproverConfig,
    LimitsConfig,
    ModelsConfig,
    RunConfig,
)
from service.db.models import Run
from service.driver.dispatch import evaluate_time_limit, improve_time_limit
from service.selection import SelectionStrategy, UnknownStrategyError, make_strategy


@dataclass(frozen=True)
class StagePlan:
    task_ids: tuple[str, ...]
    threshold: float


@dataclass(frozen=True)
class TimeLimits:
    """Celery's hard time limits of the run's jobs, in seconds."""

    improve_s: int
    evaluate_s: int


@dataclass(frozen=True)
class RunPlan:
    config: RunConfig
    stages: tuple[StagePlan, ...]
    strategy: SelectionStrategy
    time_limits: TimeLimits

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
    def trials(self) -> int:
        return self.config.evaluation.trials

    @property
    def stage_tasks(self) -> list[list[str]]:
        """The task ids of each stage, as the run stores them."""
        return [list(stage.task_ids) for stage in self.stages]

    def improver_for(self, parent_id: str) -> str:
        """The agent that improves `parent_id`: the parent itself, or the fixed improver."""
        return self.improver.agent if self.improver.agent is not None else parent_id


def plan_run(config: RunConfig, *, catalog: BenchmarkCatalog, visibility_timeout_s: int) -> RunPlan:
    """Validate `config` into a plan; raises ConfigFieldError naming the field at fault.

    Cheap checks come first: loading the benchmark may read a large dataset.
    """
    strategy = _strategy(config)
    time_limits = check_time_limits(config.limits, visibility_timeout_s)
    benchmark = load_benchmark(catalog, config.benchmark)
    stages = _stages(config, benchmark)
    if config.evaluation.heldout is not None:  # stored with the task ids it stands for
        heldout = config.evaluation.heldout.model_copy(
            update={"tasks": _heldout_tasks(config, benchmark, stages), "subset": None, "sample": None}
        )
        config = config.model_copy(
            update={"evaluation": config.evaluation.model_copy(update={"heldout": heldout})}
        )
    return RunPlan(config=config, stages=stages, strategy=strategy, time_limits=time_limits)


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


def load_benchmark(catalog: BenchmarkCatalog, config: BenchmarkConfig) -> Benchmark:
    """The benchmark, or ConfigFieldError at the option it cannot load with."""
    try:
        return catalog.get(config)
    except OptionError as exc:
        raise ConfigFieldError(f"benchmark.options.{exc.field}", str(exc)) from exc
    except (BenchmarkError, OSError) as exc:
        raise ConfigFieldError("benchmark.options", f"{config.name} cannot load: {exc}") from exc


def _some(names: list[str], shown: int = 10) -> str:
    """The first names, and how many more: a refusal stays readable whatever the list's length."""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _stages(config: RunConfig, benchmark: Benchmark) -> tuple[StagePlan, ...]:
    all_ids = [task.instance_id for task in benchmark.tasks()]
    known = set(all_ids)
    subsets = benchmark.subsets()
    stages: list[StagePlan] = []
    for index, stage in enumerate(config.stages):
        if stage.tasks is not None:
            unknown = list(dict.fromkeys(task for task in stage.tasks if task not in known))
            if unknown:
                raise ConfigFieldError(
                    f"stages.{index}.tasks", f"unknown task(s) of {benchmark.name}: {_some(unknown)}"
                )
            ids = list(dict.fromkeys(stage.tasks))
        elif stage.subset is not None:
            if stage.subset not in subsets:
                names = ", ".join(sorted(subsets))
                raise ConfigFieldError(
                    f"stages.{index}.subset", f"{benchmark.name} has no subset {stage.subset!r} ({names})"
                )
            ids = list(subsets[stage.subset])
        else:
            ids = all_ids
        if stage.sample is not None:
            ids = draw_sample(ids, stage.sample, seed=f"{config.rng_seed}:{index}")
        if not ids:
            raise ConfigFieldError(f"stages.{index}", "the stage has no tasks")
        stages.append(StagePlan(task_ids=tuple(ids), threshold=stage.threshold))
    return tuple(stages)


def _heldout_tasks(config: RunConfig, benchmark: Benchmark, stages: tuple[StagePlan, ...]) -> list[str]:
    """The held-out task ids: given, a subset, or every task no stage uses; refused if a stage uses one."""
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
    elif heldout.subset is not None:
        field += ".subset"
        subsets = benchmark.subsets()
        if heldout.subset not in subsets:
            names = ", ".join(sorted(subsets))
            raise ConfigFieldError(field, f"{benchmark.name} has no subset {heldout.subset!r} ({names})")
        ids = list(subsets[heldout.subset])
    else:
        ids = [task for task in all_ids if task not in staged]
    overlap = [task for task in ids if task in staged]
    if overlap:
        raise ConfigFieldError(
            field, f"held-out tasks must not be used by any stage; these are: {_some(overlap)}"
        )
    if heldout.sample is not None:
        ids = draw_sample(ids, heldout.sample, seed=f"{config.rng_seed}:heldout")
    if not ids:
        raise ConfigFieldError(field, "no held-out tasks are left (every task is used by a stage)")
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
    stages = tuple(
        StagePlan(task_ids=tuple(ids), threshold=stage.threshold)
        for ids, stage in zip(run.stage_tasks, config.stages, strict=True)
    )
    return RunPlan(
        config=config,
        stages=stages,
        strategy=make_strategy(config.selection.strategy, config.selection.params),
        time_limits=TimeLimits(
            improve_s=improve_time_limit(config.limits), evaluate_s=evaluate_time_limit(config.limits)
        ),
    )


_stored = _PlanCache(size=1024)


def stored_plan(run: Run) -> RunPlan:
    """The plan of a stored run, built once per process from its configuration and stages."""
    return _stored.get(run)
