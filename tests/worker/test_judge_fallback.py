"""The judge's models in fallback order: a refused primary leaves the verdict to the next one.

The scripted server (a stand-in for the remote LLM, labelled scripted) plays the judge and
refuses `scripted-gone` with a 404 `model_not_found`, as a real server does.
"""

from __future__ import annotations

from typing import Any, cast

from benchmarks.registry import get_benchmark
from contracts.config import JudgeConfig, LimitsConfig
from contracts.jobs import Budget, EvaluateJob
from contracts.records import EvaluationResult
from worker.context import WorkerContext
from worker.curriculum import DEMO_CURRICULUM, JUDGE_SCORE, build_script
from worker.judge import judge
from worker.llm.pricing import PriceTable
from worker.llm.scripted import ScriptedServer
from worker.llm.upstream import OpenAICompatibleUpstream
from worker.metrics import WorkerMetrics


class _Context:
    """The parts of a WorkerContext the judge uses: the upstream, prices, secrets and metrics."""

    def __init__(self, upstream: OpenAICompatibleUpstream) -> None:
        self.upstream, self.prices, self.secrets, self.metrics = (
            upstream,
            PriceTable.default(),
            [],
            WorkerMetrics(),
        )


def test_a_refused_judge_model_falls_back_and_the_verdict_names_the_one_that_judged() -> None:
    script = build_script(get_benchmark("clade-mini").tasks(), DEMO_CURRICULUM)
    script = script.model_copy(update={"refuse_models": ["scripted-gone"]})
    config = JudgeConfig(model=["scripted-gone", "scripted-judge"], rubric="Minimal changes only.")
    job = EvaluateJob(
        run_id="r",
        limits=LimitsConfig(),
        budget=Budget(),
        secret="s" * 32,
        evaluation_id="e",
        agent_id="a" * 40,
        task_id="clade-mini__textkit-1",
        solve_model="scripted",
        benchmark={"name": "clade-mini"},  # type: ignore[arg-type]
        judge=config,
    )
    result = EvaluationResult(resolved=True, diff="--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")
    with ScriptedServer(script) as server:
        upstream = OpenAICompatibleUpstream(server.base_url, None, timeout=10)
        ctx = cast(WorkerContext, cast(Any, _Context(upstream)))
        judged = judge(ctx, job, config, "Fix slugify.", result, [])
        upstream.close()
    verdict = judged.result.judge
    assert verdict is not None and verdict.model == "scripted-judge"
    assert verdict.score == JUDGE_SCORE and verdict.passed and judged.result.resolved
    assert [(c.model, c.http_status) for c in judged.calls] == [
        ("scripted-gone", 404),
        ("scripted-judge", 200),
    ]
    assert [c.route.why for c in judged.calls if c.route] == ["primary", "fallback"]
    assert all(c.purpose == "judge" for c in judged.calls)
