"""The judge: a model grades an evaluation's trajectory against the utility's rubric.

Asked after the tests, in the evaluate job, when the job carries a judge (its epoch's utility
has one; contracts.config.JudgeConfig). It sees the rubric, the task, the test verdict, the
agent's diff and the end of its trajectory and log, and answers a score in [0, 1] with a
reason. Its call goes through a metered chat as purpose "judge", within what the job's lease
and per-evaluation limits have left after the agent's own calls.

How it counts (`resolved`):
- `tests_and_judge`: the tests pass and the score reaches the threshold. The judge is asked
  only when the tests pass (it could not change the verdict otherwise, so nothing is spent).
- `judge_only`: the score reaches the threshold, whatever the tests said.
A tampered or not-run evaluation is never judged. An answer without a readable score, or a
failed call, is a verdict with no score that does not pass.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from contracts.config import DEFAULT_MODEL, JudgeConfig, model_chain
from contracts.jobs import Budget, EvaluateJob
from contracts.records import EvaluationResult, JudgeVerdict
from worker.context import WorkerContext
from worker.diagnose import prompt
from worker.llm import LLMCall
from worker.llm.fallback import FallbackChat
from worker.llm.metering import MeteredChat

PURPOSE = "judge"
MAX_SECTION = 6_000
MAX_REASON = 2_000
REPLY_TOKENS = 400  # a score and a sentence or two


@dataclass
class Judged:
    result: EvaluationResult
    calls: list[LLMCall]


def wanted(judge: JudgeConfig, result: EvaluationResult) -> bool:
    """Whether the judge's verdict could matter for `result`."""
    if result.infrastructure_failure is not None or result.tampered is not None:
        return False
    return judge.mode == "judge_only" or result.resolved


def judge(
    ctx: WorkerContext,
    job: EvaluateJob,
    judge: JudgeConfig,
    statement: str,
    result: EvaluationResult,
    spent: list[LLMCall],
) -> Judged:
    """`result` with the judge's verdict folded into `resolved`, and the judge's calls."""
    user = prompt("judge_user.md").substitute(
        rubric=judge.rubric,
        task_id=job.task_id,
        statement=statement[:MAX_SECTION],
        verdict=("resolved" if result.resolved else "not resolved")
        + (f": {result.grade_reason}" if result.grade_reason else ""),
        diff=result.diff[:MAX_SECTION] or "(empty: the agent changed nothing)",
        trajectory=_tail(json.dumps(result.trajectory, ensure_ascii=False))
        if result.trajectory is not None
        else "(no trajectory was recorded)",
        log=_tail(result.agent_log) or "(empty)",
    )
    models = judge_models(judge)
    chat = FallbackChat(
        MeteredChat(
            ctx.upstream,
            ctx.prices.layered(job.prices),
            purpose=PURPOSE,
            budget=left_after(job.budget, spent),
            pinned_model=models[0],
            secrets=ctx.secrets,
        ),
        models,
    )
    reply = chat.complete(
        {
            "model": models[0],
            "messages": [
                {"role": "system", "content": prompt("judge_system.md").template},
                {"role": "user", "content": user},
            ],
            "max_tokens": REPLY_TOKENS,
            "temperature": 0,
        }
    )
    ctx.metrics.count_calls(chat.calls)
    if reply.status == 200:
        content = str(reply.payload["choices"][0]["message"].get("content") or "")
        score, reason = read_verdict(content)
    else:
        message = reply.payload.get("error", {}).get("message", "unknown error")
        score, reason = None, f"the judge model answered {reply.status}: {message}"
    passed = score is not None and score >= judge.threshold
    # The configured model that gave the verdict (a fallback's, when the primary was unavailable).
    answered = next((c.route.model for c in reversed(chat.calls) if c.route is not None), models[0])
    verdict = JudgeVerdict(
        model=answered[:200],
        score=score,
        reason=reason[:MAX_REASON],
        threshold=judge.threshold,
        mode=judge.mode,
        passed=passed,
        tests_resolved=result.resolved,
    )
    resolved = passed if judge.mode == "judge_only" else result.resolved and passed
    shown = "no score" if score is None else f"{score:.2f}"
    note = f"judge {verdict.model}: {shown} (threshold {judge.threshold:g}): {verdict.reason}"
    judged = result.model_copy(
        update={
            "judge": verdict,
            "resolved": resolved,
            "grade_reason": f"{result.grade_reason}; {note}" if result.grade_reason else note,
        }
    )
    return Judged(result=judged, calls=chat.calls)


def judge_models(judge: JudgeConfig) -> tuple[str, ...]:
    """The judge's models in fallback order; a judge built with none (the service always names
    them, from `models.judge`) gets the default model."""
    return model_chain(judge.model) if judge.model is not None else (DEFAULT_MODEL,)


def read_verdict(text: str) -> tuple[float | None, str]:
    """(score, reason) from the judge's answer: a JSON object, alone or within other text."""
    start, end = text.find("{"), text.rfind("}")
    for candidate in (text.strip(), text[start : end + 1] if 0 <= start < end else ""):
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        score = data.get("score") if isinstance(data, dict) else None
        if isinstance(score, int | float) and not isinstance(score, bool) and 0.0 <= score <= 1.0:
            return float(score), str(data.get("reason") or "").strip()
    return None, f"the judge's answer has no score from 0 to 1: {text[:300]!r}"


def left_after(budget: Budget, calls: list[LLMCall]) -> Budget:
    """What the job's lease and per-evaluation limits have left once `calls` are paid."""
    usd = sum(call.cost_usd for call in calls)
    tokens = sum(call.prompt_tokens + call.completion_tokens for call in calls)
    left = budget.less(usd, tokens)
    return left.model_copy(
        update={
            "evaluation_usd": None
            if budget.evaluation_usd is None
            else max(0.0, budget.evaluation_usd - usd),
            "evaluation_tokens": None
            if budget.evaluation_tokens is None
            else max(0, budget.evaluation_tokens - tokens),
        }
    )


def _tail(text: str) -> str:
    return text[-MAX_SECTION:]
