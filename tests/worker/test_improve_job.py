"""An improve job asks the service for agents' code and hands back the child: nothing else.

The service is an httpx mock that records each request; the model and the sandbox
are stubbed, since only the job's traffic with the service is under test here.
"""

from __future__ import annotations

import io
import json
import tarfile
from typing import Any
from unittest import mock

import httpx
import pytest

from benchmarks.catalog import BenchmarkCatalog
from contracts.benchmark_options import BenchmarkConfig
from contracts.config import LimitsConfig
from contracts.jobs import Budget, EvaluationRecord, FailedEvaluation, ImproveJob
from worker import diagnose, improve
from worker.hyper import ImproveInput
from worker.service_client import ServiceClient

PARENT, IMPROVER = "a" * 40, "b" * 40
TASK = "clade-mini__textkit-1"


def agent_tar(manifest: bytes = b'solve = "python -m agent"\n') -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        data = manifest
        info = tarfile.TarInfo("agent.toml")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


class Service:
    """Answers the worker endpoints and records every request."""

    def __init__(self, manifest: bytes = b'solve = "python -m agent"\n') -> None:
        self.requests: list[str] = []
        self.bodies: list[Any] = []
        self.manifest = manifest

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(f"{request.method} {request.url.path}")
        if request.url.path.endswith("/code"):
            return httpx.Response(200, content=agent_tar(self.manifest))
        self.bodies.append(json.loads(request.content))
        return httpx.Response(200, json={"id": "c" * 40})


class Chat:
    """The diagnosis model: records the prompt it was given."""

    prompts: list[str] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.calls: list[Any] = []

    def complete(self, body: dict[str, Any], *, client_timeout_s: float | None = None) -> Any:
        Chat.prompts.append(body["messages"][-1]["content"])
        return mock.Mock(status=200, payload={"choices": [{"message": {"content": "Check your work."}}]})


def job(
    improver: str, failure: FailedEvaluation | None, records: list[EvaluationRecord] | None = None
) -> ImproveJob:
    return ImproveJob(
        run_id="r",
        secret="s" * 32,
        limits=LimitsConfig(),
        budget=Budget(run_remaining_usd=1.0),
        step_id="s",
        parent_id=PARENT,
        improver_id=improver,
        diagnose_model="m",
        improve_model="m",
        benchmark=BenchmarkConfig(),
        failure=failure,
        records=records,
    )


@pytest.mark.parametrize(
    ("improver", "expected"),
    [
        (IMPROVER, [f"GET /api/worker/agents/{PARENT}/code", f"GET /api/worker/agents/{IMPROVER}/code"]),
        (PARENT, [f"GET /api/worker/agents/{PARENT}/code"]),
    ],
)
def test_at_most_three_requests_and_the_failure_reaches_the_prompt(
    improver: str, expected: list[str]
) -> None:
    service = Service()
    client = ServiceClient("http://service", "token")
    client._http = httpx.Client(base_url="http://service", transport=httpx.MockTransport(service))
    ctx = mock.Mock(client=client, catalog=BenchmarkCatalog())
    failure = FailedEvaluation(
        evaluation_id="e",
        task_id=TASK,
        grade_reason="1 of 1 FAIL_TO_PASS tests failed",
        failing_tests=["tests/test_case.py::test_fix"],
        diff="--- a/textkit/case.py\n",
        agent_log_tail="the agent gave up",
    )
    outcome = mock.Mock(diff="diff --git a/x b/x\n", calls=[], failure=None)
    Chat.prompts = []
    with (
        mock.patch.object(diagnose, "MeteredChat", Chat),
        mock.patch.object(improve, "run_agent", return_value=outcome) as run_agent,
        mock.patch.object(improve, "validate_child", return_value=None),
    ):
        assert improve.improve(ctx, job(improver, failure)) == f"child {'c' * 12}"
    assert service.requests == [*expected, "POST /api/worker/steps/s/child"]
    (prompt,) = Chat.prompts
    for excerpt in (TASK, "tests/test_case.py::test_fix", "--- a/textkit/case.py", "the agent gave up"):
        assert excerpt in prompt
    assert run_agent.call_args.args[1].budget == Budget(run_remaining_usd=1.0)  # the job's, as sent


HYPER_TOML = b'solve = "python -m agent"\nimprove = "python -m agent.improve"\n'
RECORDS = [
    EvaluationRecord(evaluation_id="e1", task_id=TASK, grade_reason="1 of 1 FAIL_TO_PASS tests failed"),
    EvaluationRecord(evaluation_id="e2", task_id="clade-mini__ledger-1", resolved=True),
]


def client_for(service: Service) -> ServiceClient:
    client = ServiceClient("http://service", "token")
    client._http = httpx.Client(base_url="http://service", transport=httpx.MockTransport(service))
    return client


def test_a_hyper_job_runs_the_parents_own_improve_command_on_its_records() -> None:
    service = Service(HYPER_TOML)
    ctx = mock.Mock(client=client_for(service), catalog=BenchmarkCatalog())
    outcome = mock.Mock(diff="diff --git a/x b/x\n", calls=[], failure=None, note="Teach it to test.")
    with (
        mock.patch.object(diagnose, "MeteredChat") as chat,
        mock.patch.object(improve, "run_agent", return_value=outcome) as run_agent,
        mock.patch.object(improve, "validate_child", return_value=None),
    ):
        assert improve.improve(ctx, job(PARENT, None, RECORDS)) == f"child {'c' * 12}"
    chat.assert_not_called()  # no diagnosis by Clade: the parent's procedure is its own
    run = run_agent.call_args.args[1]
    assert (run.command, run.purpose, run.repo_path) == ("python -m agent.improve", "improve", "/clade/repo")
    assert run.timeout_s == LimitsConfig().improve_timeout_s and run.budget == Budget(run_remaining_usd=1.0)
    given = ImproveInput.model_validate_json(run.task_files["evaluations.json"])
    assert (given.agent_id, given.resolved, given.total) == (PARENT, 1, 2)
    assert "slugify" in given.evaluations[0].statement  # the task's statement, from the benchmark
    assert run.env["CLADE_EVALUATIONS_FILE"] == "/clade/task/evaluations.json"
    assert service.requests == [f"GET /api/worker/agents/{PARENT}/code", "POST /api/worker/steps/s/child"]
    assert service.bodies[0]["diagnosis"] == "Teach it to test."  # its note is the step's diagnosis


def test_a_hyper_job_for_a_parent_without_an_improve_command_fails_with_the_reason() -> None:
    service = Service()
    ctx = mock.Mock(client=client_for(service), catalog=BenchmarkCatalog())
    with mock.patch.object(improve, "run_agent") as run_agent:
        outcome = improve.improve(ctx, job(PARENT, None, RECORDS))
    run_agent.assert_not_called()
    assert outcome == "no child: hyper step: the parent's agent.toml declares no `improve` command to run"
    assert service.requests[-1] == "POST /api/worker/steps/s/reject"
    assert "declares no `improve` command" in service.bodies[0]["reason"]
