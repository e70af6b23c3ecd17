"""The `evaluate` job: run one agent on one task, grade its diff in a fresh sandbox, report."""

from __future__ import annotations

import time

from benchmarks.base import GradeReport, find_task
from contracts.errors import InvalidAgentError
from contracts.jobs import EvaluateJob
from contracts.records import Durations, EvaluationResult, EvaluationSubmission
from worker.agent_runner import AgentRun, run_agent
from worker.context import WorkerContext
from worker.manifests import manifest_from_tar
from worker.usage import usage_records


def evaluate(ctx: WorkerContext, job: EvaluateJob) -> EvaluationResult:
    started = time.monotonic()
    benchmark = ctx.catalog.get(job.benchmark)
    task = find_task(benchmark, job.task_id)
    code = ctx.client.agent_code(job.agent_id)
    try:
        manifest = manifest_from_tar(code)
    except InvalidAgentError as exc:
        result = EvaluationResult(resolved=False, failure=f"the agent cannot start: {exc}")
        ctx.client.submit_result(job.evaluation_id, EvaluationSubmission(result=result))
        return result
    outcome = run_agent(
        ctx,
        AgentRun(
            agent_code=code,
            manifest=manifest,
            statement=task.problem_statement,
            prepare_repo=lambda dest: benchmark.prepare_repo(task, dest),
            repo_path=task.repo_path,
            model=job.solve_model,
            purpose="solve",
            timeout_s=job.limits.solve_timeout_s,
            limits=job.limits,
            budget=job.budget,
            image=ctx.images.for_task(task, manifest.requirements),
            labels={"dev.clade.run": job.run_id, "dev.clade.evaluation": job.evaluation_id},
        ),
    )
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
    result.durations = Durations(
        setup_s=outcome.setup_s, agent_s=outcome.agent_s, grade_s=done - graded, total_s=done - started
    )
    ctx.client.submit_result(
        job.evaluation_id, EvaluationSubmission(result=result, usage=usage_records(outcome.calls))
    )
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
    )
