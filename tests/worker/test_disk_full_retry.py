"""A worker whose child meets the archive's full disk retries it, as any infrastructure failure.

The service is the real app in this process, its data on a filled tmpfs; the improve task
runs through Celery (eagerly, so its retries run at once) with the sandbox stubbed, since
only how the worker takes the service's 507 is under test.
"""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import httpx
from celery import Celery

from benchmarks.catalog import BenchmarkCatalog
from contracts.benchmark_options import BenchmarkConfig
from contracts.config import LimitsConfig
from contracts.jobs import IMPROVE_TASK, Budget, ImproveJob
from tests.helpers import fill_disk, import_seed
from tests.servers import JOB_SECRET, AppService
from tests.service.helpers import agent_ids, agent_refs, core_patch, open_step_in, start_run
from worker import improve
from worker.errors import InfrastructureError
from worker.service_client import ServiceClient
from worker.tasks import RETRY, register_tasks


class CountingTransport(httpx.BaseTransport):
    """The in-process service's transport, counting the child submissions and their answers."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.child_answers: list[int] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if request.url.path.endswith("/child"):
            self.child_answers.append(response.status_code)
        return response


def test_a_507_is_retried_like_any_infrastructure_failure_then_the_child_is_made(
    small_disk_service: AppService, small_disk: Path, tmp_path: Path
) -> None:
    service = small_disk_service
    seed = import_seed(service, tmp_path)
    run_id = start_run(service, seed)
    step_id = open_step_in(service.database_url, run_id=run_id, parent_id=seed)
    transport = CountingTransport(service.transport())
    client = ServiceClient(service.url, service.secrets["worker_token"], transport=transport)
    job = ImproveJob(
        run_id=run_id,
        secret=JOB_SECRET,  # the one open_step_in dispatched the step with
        limits=LimitsConfig(),
        budget=Budget(),
        step_id=step_id,
        parent_id=seed,
        improver_id=seed,
        diagnose_model="m",
        improve_model="m",
        benchmark=BenchmarkConfig(),
        failure=None,
    )
    app = Celery("disk-full-test")
    app.conf.task_always_eager = True
    register_tasks(app, lambda: mock.Mock(client=client, catalog=BenchmarkCatalog()))
    outcome = mock.Mock(diff=core_patch(5, "improved"), calls=[], failure=None)
    with (
        mock.patch.object(improve, "run_agent", return_value=outcome),
        mock.patch.object(improve, "validate_child", return_value=None),
    ):
        fill_disk(small_disk / "ballast")
        refused = app.tasks[IMPROVE_TASK].apply(args=[job.model_dump(mode="json")])
        # Every attempt met the full disk: retried up to the limit, never dropped as a bad patch.
        retries = RETRY["max_retries"]
        assert isinstance(retries, int) and transport.child_answers == [507] * (retries + 1)
        assert isinstance(refused.result, InfrastructureError)
        assert "answered 507" in str(refused.result) and "disk is full" in str(refused.result)
        assert agent_refs(service.data_dir) == agent_ids(service.database_url) == {seed}

        (small_disk / "ballast").unlink()
        made = app.tasks[IMPROVE_TASK].apply(args=[job.model_dump(mode="json")])
    assert made.successful() and str(made.result).startswith("child ")
    assert transport.child_answers[-1] == 200
    assert len(agent_refs(service.data_dir)) == len(agent_ids(service.database_url)) == 2
