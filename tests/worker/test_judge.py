"""The judge scorer: a model grades an evaluation's trajectory against a rubric after the tests.

Reading a judge's answer and the budget it may spend are checked alone; the worker's real
evaluation path (the seed agent in Docker on clade-mini, the scripted model, labelled as such,
playing both the solving model and the judge) is checked once, end to end through the service.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.registry import get_benchmark
from contracts.config import JudgeConfig
from contracts.jobs import Budget
from contracts.records import EvaluationResult
from tests.worker.harness import EvaluationStack, evaluation_stack
from worker.curriculum import DEMO_CURRICULUM, JUDGE_MARKER, JUDGE_SCORE, build_script
from worker.evaluate import evaluate
from worker.judge import left_after, read_verdict
from worker.llm.records import LLMCall
from worker.llm.script import Conversation, ScriptedModel

SEED_AGENT = Path(__file__).resolve().parents[2] / "seed_agent"
RUBRIC = "The change is minimal and touches only what the statement asks for."


@pytest.mark.parametrize(
    ("answer", "score", "reason"),
    [
        ('{"score": 0.75, "reason": "mostly minimal"}', 0.75, "mostly minimal"),
        ('Verdict:\n```json\n{"score": 1, "reason": "ok {fine}"}\n```', 1.0, "ok {fine}"),
        ('{"score": 1.5, "reason": "too high"}', None, "no score from 0 to 1"),
        ('{"score": true}', None, "no score from 0 to 1"),
        ("I think it is good.", None, "no score from 0 to 1"),
    ],
)
def test_a_judges_answer_is_read_or_refused(answer: str, score: float | None, reason: str) -> None:
    read = read_verdict(answer)
    assert read[0] == score and reason in read[1]


def test_the_judge_may_spend_what_the_agent_left_of_the_lease_and_the_evaluation_limits() -> None:
    call = LLMCall.model_validate(
        {
            "id": "c",
            "seq": 0,
            "purpose": "solve",
            "model": "m",
            "prompt_tokens": 60,
            "completion_tokens": 40,
            "cost_usd": 0.25,
            "started_at": "2026-01-01T00:00:00+00:00",
            "duration_s": 1.0,
            "status": "ok",
        }
    )
    budget = Budget(
        evaluation_usd=1.0, evaluation_tokens=150, run_remaining_usd=0.5, run_remaining_tokens=None
    )
    assert left_after(budget, [call, call]) == Budget(
        evaluation_usd=0.5, evaluation_tokens=0, run_remaining_usd=0.0, run_remaining_tokens=None
    )


def test_the_scripted_judge_answers_judge_prompts_only() -> None:
    model = ScriptedModel(build_script(get_benchmark("clade-mini").tasks(), DEMO_CURRICULUM))

    def rule(system: str, user: str) -> str:
        conversation = Conversation.of(
            {"messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}
        )
        return model.choose(conversation)[0]

    assert rule(JUDGE_MARKER, "# The agent's diff\n\n--- a/x\n+++ b/x\n") == "judge"
    assert rule(JUDGE_MARKER, "# The agent's diff\n\n(empty: the agent changed nothing)\n") == "judge-empty"
    assert rule("You are a coding agent.", "Improve this coding agent") != "judge"


@pytest.fixture(scope="module")
def judge_stack(tmp_path_factory: pytest.TempPathFactory, secret: str) -> Iterator[EvaluationStack]:
    script = build_script(get_benchmark("clade-mini").tasks(), DEMO_CURRICULUM)
    owner = f"test-worker-{uuid.uuid4().hex[:10]}"
    with evaluation_stack(
        tmp_path_factory.mktemp("stack"), secret=secret, owner=owner, script=script
    ) as started:
        yield started


@pytest.mark.docker
def test_the_judge_grades_a_real_evaluation_after_its_tests_metered_as_judge(
    judge_stack: EvaluationStack, base_image: str
) -> None:
    """The seed agent resolves the task (the tests pass); the scripted judge scores it 0.9, below
    the threshold 0.95, so the evaluation is not resolved, and the result says why."""
    del base_image  # built before the stack's first sandbox
    agent_id = judge_stack.import_agent(SEED_AGENT)
    run_id = judge_stack.create_run(agent_id, {})
    job = judge_stack.dispatch(run_id)
    judge = JudgeConfig(model="scripted-judge", rubric=RUBRIC, threshold=0.95)
    returned = evaluate(judge_stack.ctx, job.model_copy(update={"judge": judge}))
    with judge_stack.service.anonymous as client:
        detail = client.get(f"/api/agents/{agent_id}/evaluations/{job.evaluation_id}").json()
        usage = client.get(f"/api/runs/{run_id}/usage").json()
    result = EvaluationResult.model_validate(detail["result"])
    assert result == returned
    verdict = result.judge
    assert verdict is not None, result.grade_reason
    assert verdict.tests_resolved, f"{result.grade_reason}\n{result.agent_log}"
    assert (verdict.model, verdict.score, verdict.passed) == ("scripted-judge", JUDGE_SCORE, False)
    assert "(scripted judge)" in verdict.reason
    assert result.resolved is False and detail["resolved"] is False
    assert f"judge scripted-judge: {JUDGE_SCORE:.2f} (threshold 0.95)" in result.grade_reason

    # One judge call, metered as its own purpose next to the agent's own calls.
    metered = {row["purpose"]: row for row in usage["by_purpose"]}
    assert metered["judge"]["calls"] == 1 and metered["judge"]["tokens"] > 0
    assert metered["solve"]["calls"] >= 1
    # The judge saw the rubric and the agent's diff; the scripted model answered it as the judge.
    (judged,) = [r for r in judge_stack.llm.requests if r.rule == "judge"]
    prompt = json.dumps(judged.body)
    assert RUBRIC in prompt and "textkit" in prompt
