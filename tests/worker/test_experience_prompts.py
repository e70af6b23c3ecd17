"""A group run's experience pool reaches the diagnosis and improvement prompts; without one,
the prompts are exactly what they were."""

from __future__ import annotations

import io
import tarfile
from string import Template
from typing import Any
from unittest import mock

import httpx
import pytest

from benchmarks.catalog import BenchmarkCatalog
from contracts.benchmark_options import BenchmarkConfig
from contracts.config import LimitsConfig
from contracts.jobs import Budget, FailedEvaluation, ImproveJob
from worker import diagnose, improve
from worker.llm import UpstreamConfig, load_price_table, make_upstream
from worker.llm.script import Match, Reply, Rule, Script
from worker.llm.scripted import ScriptedServer
from worker.metrics import WorkerMetrics
from worker.service_client import ServiceClient

PARENT = "a" * 40
TASK = "clade-mini__textkit-1"

POOL = "Changes that helped:\n- step 2 (group 1): parent abc (score 0.25) -> child def admitted (+0.50)"
FAILURE = FailedEvaluation(evaluation_id="e", task_id=TASK, grade_reason="1 of 1 FAIL_TO_PASS tests failed")


def agent_tar() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        data = b'solve = "python -m agent"\n'
        info = tarfile.TarInfo("agent.toml")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def service(request: httpx.Request) -> httpx.Response:
    if request.url.path.endswith("/code"):
        return httpx.Response(200, content=agent_tar())
    return httpx.Response(200, json={"id": "c" * 40})


class Chat:
    """The diagnosis model: records the prompt it was given."""

    prompts: list[str] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.calls: list[Any] = []

    def complete(self, body: dict[str, Any], *, client_timeout_s: float | None = None) -> Any:
        Chat.prompts.append(body["messages"][-1]["content"])
        return mock.Mock(status=200, payload={"choices": [{"message": {"content": "Check your work."}}]})


def job(experience: str | None) -> ImproveJob:
    return ImproveJob(
        run_id="r",
        secret="s" * 32,
        limits=LimitsConfig(),
        budget=Budget(),
        step_id="s",
        parent_id=PARENT,
        improver_id=PARENT,
        diagnose_model="m",
        improve_model="m",
        benchmark=BenchmarkConfig(),
        failure=FAILURE,
        experience=experience,
    )


def run_improve(improve_job: ImproveJob) -> tuple[str, str]:
    """(the diagnosis prompt, the improver's statement) of one improve job."""
    client = ServiceClient("http://service", "token")
    client._http = httpx.Client(base_url="http://service", transport=httpx.MockTransport(service))
    ctx = mock.Mock(client=client, catalog=BenchmarkCatalog())
    Chat.prompts = []
    outcome = mock.Mock(diff="diff --git a/x b/x\n", calls=[], failure=None)
    with (
        mock.patch.object(diagnose, "MeteredChat", Chat),
        mock.patch.object(improve, "run_agent", return_value=outcome) as run_agent,
        mock.patch.object(improve, "validate_child", return_value=None),
    ):
        improve.improve(ctx, improve_job)
    (prompt,) = Chat.prompts
    return prompt, run_agent.call_args.args[1].statement


@pytest.mark.parametrize("experience", [None, ""])
def test_without_experience_the_prompts_are_as_before(experience: str | None) -> None:
    prompt, statement = run_improve(job(experience))
    assert "What this run's agents have tried" not in prompt + statement
    assert statement == Template((diagnose.PROMPTS / "improve.md").read_text()).substitute(
        diagnosis="Check your work."
    )
    assert prompt.rstrip().endswith("the agent's codebase.")  # the template's last line


def test_the_pool_reaches_both_prompts() -> None:
    prompt, statement = run_improve(job(POOL))
    for text in (prompt, statement):
        assert "# What this run's agents have tried so far" in text
        assert text.rstrip().endswith(POOL.splitlines()[-1])
    assert prompt.index(TASK) < prompt.index(POOL)  # after the failure, not instead of it
    assert "Check your work." in statement


def test_the_scripted_diagnosis_model_receives_the_pool() -> None:
    """Through the real metered chat: the (scripted) model answers by what its prompt holds."""
    script = Script(
        model="scripted",
        rules=[
            Rule(
                name="experience",
                match=Match(
                    last_user=r"# What this run's agents have tried so far.*child def admitted \(\+0\.50\)"
                ),
                reply=Reply(content="(scripted) Build on step 2's change"),
            )
        ],
        default=Reply(content="(scripted) no experience seen"),
    )
    with ScriptedServer(script) as server:
        ctx = mock.Mock(
            upstream=make_upstream(UpstreamConfig(base_url=server.base_url)),
            prices=load_price_table(None),
            secrets=[],
            catalog=BenchmarkCatalog(),
            metrics=WorkerMetrics(),
        )
        with_pool = diagnose.diagnose(
            ctx, job(POOL).model_copy(update={"diagnose_model": "scripted"}), agent_tar()
        )
        without = diagnose.diagnose(
            ctx, job(None).model_copy(update={"diagnose_model": "scripted"}), agent_tar()
        )
    assert with_pool.text == "(scripted) Build on step 2's change"
    assert without.text == "(scripted) no experience seen"
