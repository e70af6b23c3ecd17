"""Diagnosis: pick one failure of the parent and ask the diagnosis model for one improvement."""

from __future__ import annotations

import io
import json
import random
import tarfile
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any

from benchmarks.base import Benchmark, find_task
from contracts.jobs import ImproveJob
from worker.context import WorkerContext
from worker.llm import Budget, LLMCall
from worker.llm.metering import MeteredChat

PROMPTS = Path(__file__).parent / "prompts"
MAX_SECTION = 6_000
NO_FAILURE = (
    "The agent resolved every task it was evaluated on. Make it more reliable: for example, "
    "have it check its change by running the repository's tests before it finishes."
)


@dataclass
class Diagnosis:
    text: str
    task_id: str | None
    calls: list[LLMCall]


def prompt(name: str) -> Template:
    return Template((PROMPTS / name).read_text())


def diagnose(ctx: WorkerContext, job: ImproveJob, benchmark: Benchmark, parent_code: bytes) -> Diagnosis:
    failure = pick_failure(ctx, job)
    if failure is None:
        return Diagnosis(text=NO_FAILURE, task_id=None, calls=[])
    result = failure.get("result") or {}
    task = find_task(benchmark, failure["task_id"])
    user = prompt("diagnose_user.md").substitute(
        task_id=task.instance_id,
        statement=task.problem_statement[:MAX_SECTION],
        verdict=_verdict(result),
        diff=(result.get("diff") or "(empty: the agent changed nothing)")[:MAX_SECTION],
        trajectory=_trajectory_tail(result.get("trajectory")),
        files=_file_list(parent_code),
    )
    chat = MeteredChat(
        ctx.upstream,
        ctx.prices,
        purpose="diagnose",
        budget=Budget(run_remaining_usd=job.run_remaining_usd, run_remaining_tokens=job.run_remaining_tokens),
        pinned_model=job.diagnose_model,
        secrets=ctx.secrets,
    )
    reply = chat.complete(
        {
            "model": job.diagnose_model,
            "messages": [
                {"role": "system", "content": prompt("diagnose_system.md").template},
                {"role": "user", "content": user},
            ],
        }
    )
    if reply.status != 200:
        message = reply.payload.get("error", {}).get("message", "unknown error")
        raise DiagnosisFailed(f"the diagnosis model answered {reply.status}: {message}", chat.calls)
    text = str(reply.payload["choices"][0]["message"].get("content") or "").strip()
    if not text:
        raise DiagnosisFailed("the diagnosis model gave an empty answer", chat.calls)
    return Diagnosis(text=text, task_id=task.instance_id, calls=chat.calls)


class DiagnosisFailed(RuntimeError):
    def __init__(self, message: str, calls: list[LLMCall]) -> None:
        super().__init__(message)
        self.calls = calls


def pick_failure(ctx: WorkerContext, job: ImproveJob) -> dict[str, Any] | None:
    """One unresolved evaluation of the parent in this run, chosen reproducibly by step id."""
    parent = ctx.client.agent(job.parent_id)
    in_run = next((r for r in parent["runs"] if r["run_id"] == job.run_id), None)
    failed = sorted(
        (e for e in (in_run or {}).get("evaluations", []) if e["status"] == "done" and not e["resolved"]),
        key=lambda e: e["task_id"],
    )
    if not failed:
        return None
    chosen = random.Random(job.step_id).choice(failed)
    return ctx.client.evaluation(job.parent_id, chosen["id"])


def _verdict(result: dict[str, Any]) -> str:
    lines = [result.get("grade_reason") or ""]
    if result.get("failure"):
        lines.append(f"Agent failure: {result['failure']}")
    failing = [t for t, s in (result.get("fail_to_pass") or {}).items() if s not in ("PASSED", "XFAIL")]
    broken = [t for t, s in (result.get("pass_to_pass") or {}).items() if s not in ("PASSED", "XFAIL")]
    if failing:
        lines.append("Tests that should pass after the fix but did not: " + ", ".join(failing))
    if broken:
        lines.append("Tests that passed before and broke: " + ", ".join(broken))
    return "\n".join(line for line in lines if line) or "not resolved"


def _trajectory_tail(trajectory: object, steps: int = 12) -> str:
    if not isinstance(trajectory, dict) or not isinstance(trajectory.get("messages"), list):
        return "(no trajectory was recorded)"
    tail = trajectory["messages"][-steps:]
    text = "\n".join(json.dumps(message, ensure_ascii=False)[:800] for message in tail)
    return text[-MAX_SECTION:]


def _file_list(code: bytes) -> str:
    with tarfile.open(fileobj=io.BytesIO(code), mode="r:*") as tar:
        return "\n".join(f"- {m.name}" for m in tar.getmembers() if m.isfile())[:MAX_SECTION]
