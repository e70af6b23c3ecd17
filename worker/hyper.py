"""Hyper steps (hyperagent mode): the parent's own `improve` command instead of Clade's diagnosis.

The command runs exactly where Clade's improver runs (same sandbox, limits, metered gateway
with purpose "improve", time limit and output caps): the parent's code at /clade/agent, a
writable copy of it at /clade/repo (its working directory), and its evaluation records in
CLADE_EVALUATIONS_FILE. Whatever it changes in the copy is the child's patch, validated and
submitted as any other (docs/hyperagents.md).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from contracts.errors import InvalidAgentError
from contracts.jobs import EvaluationRecord, ImproveJob
from worker.agent_runner import AgentRun
from worker.context import WorkerContext
from worker.diagnose import prompt
from worker.manifests import manifest_from_tar

RECORDS_FILE = "evaluations.json"
NOTE_FILE = "diagnosis.md"
MAX_STATEMENT = 4_000
REPO = "/clade/repo"


class TaskRecord(EvaluationRecord):
    statement: str = ""  # the start of the task's problem statement


class ImproveInput(BaseModel):
    """The file an agent's `improve` command reads (CLADE_EVALUATIONS_FILE)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    run_id: str
    agent_id: str  # the parent: the agent being improved
    benchmark: str
    resolved: int
    total: int
    evaluations: list[TaskRecord]


def hyper_run(
    ctx: WorkerContext, job: ImproveJob, parent_code: bytes, prepare: Callable[[Path], object]
) -> AgentRun:
    """The sandboxed run of the parent's `improve` command; InvalidAgentError if it has none."""
    try:
        manifest = manifest_from_tar(parent_code)
    except InvalidAgentError as exc:
        raise InvalidAgentError(f"the parent's improve command cannot start: {exc}") from exc
    if manifest.improve is None:
        raise InvalidAgentError("hyper step: the parent's agent.toml declares no `improve` command to run")
    records = _input(ctx, job)
    statement = prompt("hyper.md").substitute(
        repo=REPO,
        resolved=records.resolved,
        total=records.total,
        records_file=f"/clade/task/{RECORDS_FILE}",
        note_file=f"/clade/out/{NOTE_FILE}",
    )
    return AgentRun(
        agent_code=parent_code,
        manifest=manifest,
        statement=statement,
        prepare_repo=prepare,
        repo_path=REPO,
        model=job.improve_model,
        fallbacks=job.improve_fallbacks,
        purpose="improve",
        timeout_s=job.limits.improve_timeout_s,
        limits=job.limits,
        budget=job.budget,
        prices=job.prices,
        image=ctx.images.for_agent(manifest.requirements),
        runtime=ctx.images.runtime(manifest.requirements),
        labels={"dev.clade.run": job.run_id, "dev.clade.step": job.step_id, "dev.clade.kind": "hyper"},
        command=manifest.improve,
        task_files={RECORDS_FILE: records.model_dump_json(indent=1)},
        env={
            "CLADE_EVALUATIONS_FILE": f"/clade/task/{RECORDS_FILE}",
            "CLADE_NOTE_FILE": f"/clade/out/{NOTE_FILE}",
        },
        note_file=NOTE_FILE,
    )


def _input(ctx: WorkerContext, job: ImproveJob) -> ImproveInput:
    records = job.records or []
    # The statements come from the benchmark, loaded only when there are records to explain.
    tasks = {t.instance_id: t for t in ctx.catalog.get(job.benchmark).tasks()} if records else {}
    return ImproveInput(
        run_id=job.run_id,
        agent_id=job.parent_id,
        benchmark=job.benchmark.name,
        resolved=sum(r.resolved for r in records),
        total=len(records),
        evaluations=[
            TaskRecord(
                **record.model_dump(),
                # A task the benchmark no longer lists keeps the rest of its record.
                statement=tasks[record.task_id].problem_statement[:MAX_STATEMENT]
                if record.task_id in tasks
                else "",
            )
            for record in records
        ],
    )
