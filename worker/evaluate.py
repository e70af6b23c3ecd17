"""The `evaluate` job: run one agent on one task, grade its diff in a fresh sandbox, report.

When the job carries a judge (its epoch's utility has one), the judge grades the trajectory
after the tests and its verdict is folded into the result (`worker.judge`).

An evaluation that cannot run at all (its task image cannot be built or lacks what the task
needs, e.g. a polyglot language's toolchain; or Celery's retries of an infrastructure error
ran out) is reported at once as an infrastructure failure with
its cause, so the run shows why instead of waiting for the driver to give up on it.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from benchmarks.base import BenchmarkError, GradeReport, Task, check_environment, find_task
from contracts.benchmark_options import BenchmarkOptionError
from contracts.errors import InvalidAgentError
from contracts.jobs import EvaluateJob
from contracts.records import Durations, EvaluationResult, EvaluationSubmission
from sandbox.base import SandboxError
from worker.agent_runner import AgentRun, run_agent
from worker.call_review import tool_warning, upstream_failure
from worker.context import WorkerContext
from worker.errors import InfrastructureError
from worker.judge import judge, wanted
from worker.manifests import manifest_from_tar
from worker.usage import usage_records

log = logging.getLogger("clade.worker")
# Pauses between attempts at an agent's image: a few tries in-process (a build that lost a
# race, a busy engine), then the evaluation is reported failed with the cause.
IMAGE_RETRY_DELAYS_S = (1.0, 4.0)


def evaluate(ctx: WorkerContext, job: EvaluateJob) -> EvaluationResult:
    started = time.monotonic()
    try:
        benchmark = ctx.catalog.get(job.benchmark)
    except BenchmarkOptionError as exc:  # checked by the service: this worker lacks what it has
        raise InfrastructureError(
            f"this worker cannot load the benchmark {job.benchmark.name!r}: {exc}"
        ) from exc
    task = find_task(benchmark, job.task_id)
    code = ctx.client.agent_code(job.agent_id)
    try:
        manifest = manifest_from_tar(code)
    except InvalidAgentError as exc:
        return _cannot_start(ctx, job, exc)
    try:
        # What the task needs of this worker's sandboxes (polyglot: its toolchain image),
        # asked here: the service that planned the run never talks to a sandbox engine.
        check_environment(benchmark, [task], ctx.backend)
    except BenchmarkError as exc:
        return report_infrastructure_failure(ctx, job, f"task {task.instance_id} cannot run here: {exc}")
    try:
        image, runtime = agent_images(ctx, task, manifest.requirements)
    except SandboxError as exc:
        return report_infrastructure_failure(
            ctx, job, f"the image for task {task.instance_id} could not be built: {exc}"
        )
    try:
        outcome = run_agent(
            ctx,
            AgentRun(
                agent_code=code,
                manifest=manifest,
                statement=task.problem_statement,
                prepare_repo=lambda dest: benchmark.prepare_repo(task, dest),
                repo_path=task.repo_path,
                model=job.solve_model,
                fallbacks=job.solve_fallbacks,
                purpose="solve",
                timeout_s=min(job.limits.solve_timeout_s, task.solve_timeout_s or job.limits.solve_timeout_s),
                limits=job.limits,
                budget=job.budget,
                prices=job.prices,
                image=image,
                runtime=runtime,
                tools_path=task.tools_path,
                labels={"dev.clade.run": job.run_id, "dev.clade.evaluation": job.evaluation_id},
            ),
        )
    except InvalidAgentError as exc:  # code that does not unpack (archived before links were resolved)
        return _cannot_start(ctx, job, exc)
    graded = time.monotonic()
    report = benchmark.grade(task, outcome.diff, ctx.backend, ctx.images.base(), job.limits.test_timeout_s)
    done = time.monotonic()
    result = result_from(
        report,
        outcome.diff,
        outcome.trajectory,
        outcome.log,
        outcome.exit_code,
        outcome.timed_out,
        outcome.failure,
    )
    calls = outcome.calls
    # A run whose every model call the upstream failed measured the upstream, not the agent.
    cause = upstream_failure(outcome.calls)
    if cause is not None and not result.resolved:
        result.infrastructure_failure, result.upstream_failed = cause, True
    warning = tool_warning(outcome.calls)
    if warning is not None:
        result.warnings.append(warning)
    if job.judge is not None and wanted(job.judge, result):
        judged = judge(ctx, job, job.judge, task.problem_statement, result, outcome.calls)
        result, calls = judged.result, calls + judged.calls
    result.durations = Durations(
        setup_s=outcome.setup_s,
        agent_s=outcome.agent_s,
        grade_s=done - graded,
        total_s=time.monotonic() - started,
    )
    ctx.client.submit_result(
        job.evaluation_id, EvaluationSubmission(result=result, usage=usage_records(calls)), secret=job.secret
    )
    return result


def _cannot_start(ctx: WorkerContext, job: EvaluateJob, exc: InvalidAgentError) -> EvaluationResult:
    """The agent's own failure, recorded: its code is not an agent that can run."""
    result = EvaluationResult(resolved=False, failure=f"the agent cannot start: {exc}")
    ctx.client.submit_result(job.evaluation_id, EvaluationSubmission(result=result), secret=job.secret)
    return result


def agent_images(ctx: WorkerContext, task: Task, requirements: list[str]) -> tuple[str, Path]:
    """The image the agent runs `task` in and its runtime folder, tried 1 + len(IMAGE_RETRY_DELAYS_S)
    times."""
    for delay in IMAGE_RETRY_DELAYS_S:
        try:
            return ctx.images.for_task(task, requirements), ctx.images.runtime(requirements)
        except SandboxError as exc:
            log.warning("image for %s failed, trying again in %.0fs: %s", task.instance_id, delay, exc)
            time.sleep(delay)
    return ctx.images.for_task(task, requirements), ctx.images.runtime(requirements)


def report_infrastructure_failure(ctx: WorkerContext, job: EvaluateJob, cause: str) -> EvaluationResult:
    """Record the evaluation as not run, for `cause` (the infrastructure's fault, not the agent's)."""
    result = EvaluationResult(resolved=False, patch_applied=False, infrastructure_failure=cause)
    try:
        ctx.client.submit_result(job.evaluation_id, EvaluationSubmission(result=result), secret=job.secret)
    except InfrastructureError as exc:
        # The service is unreachable too: the driver's re-dispatch is all that is left.
        log.error("evaluation %s: cannot report %r: %s", job.evaluation_id, cause, exc)
        raise
    return result


def result_from(
    report: GradeReport,
    diff: str,
    trajectory: object,
    log: str,
    exit_code: int,
    timed_out: bool,
    failure: str | None,
) -> EvaluationResult:
    statuses = {test: status.value for test, status in report.test_statuses.items()}

    def group(tests: list[str]) -> dict[str, str]:
        return {test: statuses.get(test, "MISSING") for test in tests}

    f2p = report.FAIL_TO_PASS.success + report.FAIL_TO_PASS.failure
    p2p = report.PASS_TO_PASS.success + report.PASS_TO_PASS.failure
    return EvaluationResult(
        resolved=report.resolved,
        patch_applied=report.patch_applied,
        grade_reason=report.reason,
        tests=statuses,
        fail_to_pass=group(f2p),
        pass_to_pass=group(p2p),
        diff=diff,
        trajectory=trajectory,
        agent_log=log,
        test_log=report.log_tail,
        agent_exit_code=exit_code,
        timed_out=timed_out,
        failure=failure,
        dropped_for_grading=dict(report.dropped_for_grading),
        runner_tampering=dict(report.runner_tampering),
        tampered=report.tampered,
    )
