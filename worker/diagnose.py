"""Diagnosis: ask the diagnosis model for one improvement from the failure the job carries."""

from __future__ import annotations

import io
import tarfile
from dataclasses import dataclass
from pathlib import Path
from string import Template

from benchmarks.base import find_task
from contracts.jobs import FailedEvaluation, ImproveJob
from worker.context import WorkerContext
from worker.llm import LLMCall
from worker.llm.fallback import FallbackChat
from worker.llm.metering import MeteredChat

PROMPTS = Path(__file__).parent / "prompts"
MAX_SECTION = 6_000
# An explicit reply limit: without one a server writes to its own limit, and a budgeted
# gateway holds (and lets through) a reply of 32,768 tokens. A diagnosis is a few paragraphs.
REPLY_TOKENS = 2_000
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


def with_experience(text: str, experience: str | None) -> str:
    """`text`, followed by the run's shared experience when the job carries one (group runs)."""
    if not experience:
        return text
    return text.rstrip("\n") + "\n\n" + prompt("experience.md").substitute(experience=experience.strip())


def diagnose(ctx: WorkerContext, job: ImproveJob, parent_code: bytes) -> Diagnosis:
    failure = job.failure
    if failure is None:
        return Diagnosis(text=NO_FAILURE, task_id=None, calls=[])
    # The statement comes from the benchmark, loaded only when there is a failure to explain.
    task = find_task(ctx.catalog.get(job.benchmark), failure.task_id)
    user = prompt("diagnose_user.md").substitute(
        task_id=task.instance_id,
        statement=task.problem_statement[:MAX_SECTION],
        verdict=_verdict(failure),
        diff=failure.diff or "(empty: the agent changed nothing)",
        trajectory=failure.trajectory_tail or "(no trajectory was recorded)",
        log=failure.agent_log_tail or "(empty)",
        files=_file_list(parent_code),
    )
    chat = FallbackChat(
        MeteredChat(
            ctx.upstream,
            ctx.prices.layered(job.prices),
            purpose="diagnose",
            budget=job.budget,
            pinned_model=job.diagnose_model,
            secrets=ctx.secrets,
        ),
        [job.diagnose_model, *job.diagnose_fallbacks],
    )
    reply = chat.complete(
        {
            "model": job.diagnose_model,
            "messages": [
                {"role": "system", "content": prompt("diagnose_system.md").template},
                {"role": "user", "content": with_experience(user, job.experience)},
            ],
            "max_tokens": REPLY_TOKENS,
        }
    )
    ctx.metrics.count_calls(chat.calls)
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


def _verdict(failure: FailedEvaluation) -> str:
    lines = [failure.grade_reason]
    if failure.agent_failure:
        lines.append(f"Agent failure: {failure.agent_failure}")
    if failure.failing_tests:
        lines.append("Tests that should pass after the fix but did not: " + ", ".join(failure.failing_tests))
    if failure.broken_tests:
        lines.append("Tests that passed before and broke: " + ", ".join(failure.broken_tests))
    return "\n".join(line for line in lines if line) or "not resolved"


def _file_list(code: bytes) -> str:
    with tarfile.open(fileobj=io.BytesIO(code), mode="r:*") as tar:
        return "\n".join(f"- {m.name}" for m in tar.getmembers() if m.isfile())[:MAX_SECTION]
