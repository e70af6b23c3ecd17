"""The `improve` job: one step's child, from diagnosis to a validated patch.

The job carries the failure to diagnose, so the service is asked for three things
at most: the parent's code, the improver's (unless it is the parent) and, at the
end, the child or the reason there is none.
"""

from __future__ import annotations

from pathlib import Path

from contracts.errors import InvalidAgentError
from contracts.jobs import ImproveJob
from contracts.records import ChildSubmission, StepFailure
from worker.agent_runner import AgentRun, run_agent
from worker.context import WorkerContext
from worker.diagnose import DiagnosisFailed, diagnose, prompt, with_experience
from worker.llm import LLMCall
from worker.manifests import manifest_from_tar
from worker.usage import usage_records
from worker.validation import validate_child
from worker.workspace import init_repo, unpack


def improve(ctx: WorkerContext, job: ImproveJob) -> str:
    """Returns what happened, for the worker's log: the child id, or why there is none."""
    parent_code = ctx.client.agent_code(job.parent_id)
    try:
        diagnosis = diagnose(ctx, job, parent_code)
    except DiagnosisFailed as exc:
        return _reject(ctx, job, str(exc), None, exc.calls)
    improver_code = (
        parent_code if job.improver_id == job.parent_id else ctx.client.agent_code(job.improver_id)
    )
    try:
        manifest = manifest_from_tar(improver_code)
    except InvalidAgentError as exc:
        return _reject(ctx, job, f"the improver cannot start: {exc}", diagnosis.text, diagnosis.calls)

    def prepare(dest: Path) -> None:
        unpack(parent_code, dest)
        init_repo(dest, f"agent {job.parent_id[:12]}")

    outcome = run_agent(
        ctx,
        AgentRun(
            agent_code=improver_code,
            manifest=manifest,
            statement=with_experience(
                prompt("improve.md").substitute(diagnosis=diagnosis.text), job.experience
            ),
            prepare_repo=prepare,
            repo_path="/clade/repo",
            model=job.improve_model,
            purpose="improve",
            timeout_s=job.limits.improve_timeout_s,
            limits=job.limits,
            # The diagnosis spent part of the job's lease; the improver gets the rest.
            budget=job.budget.less(
                sum(c.cost_usd for c in diagnosis.calls),
                sum(c.prompt_tokens + c.completion_tokens for c in diagnosis.calls),
            ),
            image=ctx.images.for_agent(manifest.requirements),
            runtime=ctx.images.runtime(manifest.requirements),
            labels={"dev.clade.run": job.run_id, "dev.clade.step": job.step_id},
        ),
    )
    calls = diagnosis.calls + outcome.calls
    if not outcome.diff.strip():
        reason = "the improver produced an empty patch"
        if outcome.failure:
            reason += f" ({outcome.failure})"
        return _reject(ctx, job, reason, diagnosis.text, calls)
    rejection = validate_child(ctx, parent_code, outcome.diff, job.limits)
    child = ctx.client.submit_child(
        job.step_id,
        ChildSubmission(
            patch=outcome.diff, diagnosis=diagnosis.text, rejection=rejection, usage=usage_records(calls)
        ),
    )
    return f"child {child['id'][:12]}" + (f" rejected: {rejection}" if rejection else "")


def _reject(
    ctx: WorkerContext, job: ImproveJob, reason: str, diagnosis: str | None, calls: list[LLMCall]
) -> str:
    ctx.client.reject_step(
        job.step_id, StepFailure(reason=reason, diagnosis=diagnosis, usage=usage_records(calls))
    )
    return f"no child: {reason}"
