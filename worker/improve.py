"""The `improve` job: one step's child, from diagnosis to a validated patch.

The job carries the failure to diagnose, so the service is asked for three things
at most: the parent's code, the improver's (unless it is the parent) and, at the
end, the child or the reason there is none. A hyper step (the job carries the parent's
evaluation records) runs the parent's own `improve` command instead of the diagnosis and
the improver (worker/hyper.py); its patch takes the same way from there.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from contracts.errors import InvalidAgentError
from contracts.jobs import CrossoverPart, ImproveJob
from contracts.records import ChildSubmission, StepFailure
from worker.agent_runner import AgentOutcome, AgentRun, run_agent
from worker.context import WorkerContext
from worker.diagnose import Diagnosis, DiagnosisFailed, diagnose, prompt, with_experience
from worker.errors import RefusedError
from worker.hyper import hyper_run
from worker.llm import LLMCall
from worker.manifests import manifest_from_tar
from worker.usage import usage_records
from worker.validation import validate_child
from worker.workspace import init_repo, unpack

# What the service answers to a submission it will never take as it is: too large, or refused
# field by field (the patch, the usage).
REFUSED_PATCH = (413, 422)
MAX_REASON = 20_000  # StepFailure.reason's own limit


def improve(ctx: WorkerContext, job: ImproveJob) -> str:
    """Returns what happened, for the worker's log: the child id, or why there is none."""
    parent_code = ctx.client.agent_code(job.parent_id)
    merged: bytes | None = None

    def prepare(dest: Path) -> None:
        unpack(parent_code, dest)
        init_repo(dest, f"agent {job.parent_id[:12]}")
        if merged is not None:  # the merge in the work tree, so the diff is taken against the first parent
            for item in dest.iterdir():
                if item.name == ".git":
                    continue
                if item.is_dir() and not item.is_symlink():
                    shutil.rmtree(item)
                else:
                    item.unlink()
            unpack(merged, dest)

    if job.records is not None:
        try:
            run = hyper_run(ctx, job, parent_code, prepare)
        except InvalidAgentError as exc:
            return _reject(ctx, job, str(exc), None, [])
        outcome = run_agent(ctx, run)
        note = outcome.note or f"(the parent's own improve command ran: {run.command})"
        return _submit(ctx, job, parent_code, outcome, note, outcome.calls, "the improve command")
    if job.crossover is None:
        try:
            diagnosis = diagnose(ctx, job, parent_code)
        except DiagnosisFailed as exc:
            return _reject(ctx, job, str(exc), None, exc.calls)
        statement = prompt("improve.md").substitute(diagnosis=diagnosis.text)
    else:  # a crossover whose merge conflicted: the task is its resolution, nothing to diagnose
        merged = ctx.client.merged_code(job.step_id)
        diagnosis, statement = _resolution(job.parent_id, job.crossover)
    improver_code = (
        parent_code if job.improver_id == job.parent_id else ctx.client.agent_code(job.improver_id)
    )
    try:
        manifest = manifest_from_tar(improver_code)
    except InvalidAgentError as exc:
        return _reject(ctx, job, f"the improver cannot start: {exc}", diagnosis.text, diagnosis.calls)

    outcome = run_agent(
        ctx,
        AgentRun(
            agent_code=improver_code,
            manifest=manifest,
            statement=with_experience(statement, job.experience),
            prepare_repo=prepare,
            repo_path="/clade/repo",
            model=job.improve_model,
            fallbacks=job.improve_fallbacks,
            purpose="improve",
            timeout_s=job.limits.improve_timeout_s,
            limits=job.limits,
            # The diagnosis spent part of the job's lease; the improver gets the rest.
            budget=job.budget.less(
                sum(c.cost_usd for c in diagnosis.calls),
                sum(c.prompt_tokens + c.completion_tokens for c in diagnosis.calls),
            ),
            prices=job.prices,
            image=ctx.images.for_agent(manifest.requirements),
            runtime=ctx.images.runtime(manifest.requirements),
            labels={"dev.clade.run": job.run_id, "dev.clade.step": job.step_id},
        ),
    )
    return _submit(ctx, job, parent_code, outcome, diagnosis.text, diagnosis.calls + outcome.calls)


def _submit(
    ctx: WorkerContext,
    job: ImproveJob,
    parent_code: bytes,
    outcome: AgentOutcome,
    diagnosis: str,
    calls: list[LLMCall],
    who: str = "the improver",
) -> str:
    """Validate the patch the run left and hand the child (or the reason there is none) back."""
    if not outcome.diff.strip():
        reason = f"{who} produced an empty patch"
        if outcome.failure:
            reason += f" ({outcome.failure})"
        return _reject(ctx, job, reason, diagnosis, calls)
    rejection = _markers_left(outcome.diff) or validate_child(ctx, parent_code, outcome.diff, job.limits)
    try:
        child = ctx.client.submit_child(
            job.step_id,
            ChildSubmission(
                patch=outcome.diff, diagnosis=diagnosis, rejection=rejection, usage=usage_records(calls)
            ),
            secret=job.secret,
        )
    except RefusedError as exc:
        if exc.status not in REFUSED_PATCH:
            raise
        # The service will not archive this patch (a link out of the agent, every file deleted,
        # too many files, too large): the step ends without a child, with the service's reason.
        return _reject(
            ctx, job, f"the service refused the child ({exc.status}): {exc.detail}", diagnosis, calls
        )
    return f"child {child['id'][:12]}" + (f" rejected: {rejection}" if rejection else "")


def _resolution(parent_id: str, crossover: CrossoverPart) -> tuple[Diagnosis, str]:
    """What the step records as its diagnosis, and the improver's statement."""
    conflicts = "\n".join(f"- {path}" for path in crossover.conflicts) or "- (none listed)"
    text = (
        f"The merge of {parent_id[:12]} and {crossover.second_parent_id[:12]} conflicts in: "
        + ", ".join(crossover.conflicts)
        + ". Resolve the conflicts, keeping both parents' changes."
    )
    statement = prompt("crossover.md").substitute(
        first=parent_id[:12], second=crossover.second_parent_id[:12], conflicts=conflicts
    )
    return Diagnosis(text=text, task_id=None, calls=[]), statement


def _markers_left(diff: str) -> str | None:
    """Why a patch is refused if it adds conflict markers (an unresolved merge), else None."""
    files: list[str] = []
    current = ""
    for line in diff.splitlines():
        if line.startswith("+++ "):
            current = line[6:] if line.startswith("+++ b/") else line[4:]
        elif line.startswith(("+<<<<<<< ", "+>>>>>>> ")) and current not in files:
            files.append(current)
    return f"conflict markers left in: {', '.join(files)}" if files else None


def _reject(
    ctx: WorkerContext, job: ImproveJob, reason: str, diagnosis: str | None, calls: list[LLMCall]
) -> str:
    reason = reason if len(reason) <= MAX_REASON else reason[: MAX_REASON - 3] + "..."
    failure = StepFailure(reason=reason, diagnosis=diagnosis, usage=usage_records(calls))
    try:
        ctx.client.reject_step(job.step_id, failure, secret=job.secret)
    except RefusedError as exc:
        if exc.status not in REFUSED_PATCH:
            raise
        # The diagnosis or the usage is what the service refused: the reason alone still ends the
        # step, so it never waits for a re-dispatch.
        note = f" (diagnosis and usage not recorded: refused with {exc.status}: {exc.detail})"
        bare = StepFailure(reason=(reason + note)[:MAX_REASON])
        ctx.client.reject_step(job.step_id, bare, secret=job.secret)
    return f"no child: {reason}"
