"""`/metrics`: the figures an operator scrapes, after a small run and while the broker is down."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from contracts.celery_app import QUEUE
from contracts.records import EvaluationResult, EvaluationSubmission
from service.metrics import ServiceMetrics
from service.results import record_evaluation
from tests.servers import AppService, app_service, free_port, service_env, settings_from_env
from tests.service.driver_world import T, World


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of an exposition, by name and labels."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(found: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return found[(name, frozenset(labels.items()))]


def test_a_small_run_is_counted_by_status_with_durations_and_usage(world: World, tmp_path: Path) -> None:
    settings = settings_from_env(service_env(tmp_path / "data", None, free_port()))
    metrics = ServiceMetrics(settings=settings, sessions=world.sessions, driver_state=world.driver.state)
    world.start(stages=[{"tasks": T[:2]}], budget={"max_children": 1})
    world.driver.run_once()
    _, evaluate = world.outbox.take()
    for job in evaluate:  # the seed: one of two resolved, the other an infrastructure failure
        failure = None if job.task_id == T[0] else "no engine"
        world.answer(
            job,
            resolved=failure is None,
            usd=0.5,
            result=EvaluationResult(resolved=failure is None, infrastructure_failure=failure),
        )
    world.driver.run_once()
    improve, _ = world.outbox.take()
    world.make_child(improve[0])
    world.driver.run_once()
    _, evaluate = world.outbox.take()
    for job in evaluate:
        world.answer(job, resolved=False, usd=0.25)
    world.driver.run_once()
    world.driver.run_once()

    found = samples(generate_latest(metrics.registry).decode())
    assert value(found, "clade_runs", status="completed") == 1
    assert value(found, "clade_runs", status="running") == 0
    assert value(found, "clade_steps", status="admitted") == 1
    assert value(found, "clade_steps", status="pending") == 0
    assert value(found, "clade_evaluations", status="done") == 4
    assert value(found, "clade_evaluation_duration_seconds_count", outcome="resolved") == 1
    assert value(found, "clade_evaluation_duration_seconds_count", outcome="unresolved") == 2
    assert value(found, "clade_evaluation_duration_seconds_count", outcome="infrastructure_failure") == 1
    assert value(found, "clade_step_duration_seconds_count", status="admitted") == 1
    assert value(found, "clade_evaluation_duration_seconds_sum", outcome="resolved") >= 0
    # World.answer records one call per evaluation: 10 prompt and 5 completion tokens on model "m".
    assert value(found, "clade_llm_calls_total", purpose="solve", model="m") == 4
    assert value(found, "clade_llm_tokens_total", purpose="solve", model="m", kind="prompt") == 40
    assert value(found, "clade_llm_tokens_total", purpose="solve", model="m", kind="completion") == 20
    assert value(found, "clade_llm_cost_usd_total", purpose="solve", model="m") == pytest.approx(1.5)
    assert value(found, "clade_database_up") == 1
    assert value(found, "clade_queue_depth", queue=QUEUE) == 0
    assert value(found, "clade_driver_up") == 0  # ticked by hand: no thread
    assert 0 <= value(found, "clade_driver_tick_age_seconds") < 60
    assert value(found, "clade_driver_consecutive_failures") == 0


def test_a_rolled_back_transaction_counts_nothing(world: World, tmp_path: Path) -> None:
    settings = settings_from_env(service_env(tmp_path / "data", None, free_port()))
    metrics = ServiceMetrics(settings=settings, sessions=world.sessions, driver_state=None)
    world.start(stages=[{"tasks": T[:1]}])
    world.driver.run_once()
    _, evaluate = world.outbox.take()
    with pytest.raises(RuntimeError), world.sessions.begin() as session:
        record_evaluation(
            session,
            evaluation_id=evaluate[0].evaluation_id,
            submission=EvaluationSubmission(result=EvaluationResult(resolved=True)),
        )
        session.flush()
        raise RuntimeError("the transaction fails after its flush")
    found = samples(generate_latest(metrics.registry).decode())
    assert value(found, "clade_evaluation_duration_seconds_count", outcome="resolved") == 0
    assert value(found, "clade_evaluations", status="pending") == 1


def scrape(service: AppService, token: str | None = None) -> tuple[int, str]:
    with service.client(token) as client:
        response = client.get("/metrics")
    return response.status_code, response.text


def test_metrics_endpoint_counts_queued_jobs_of_the_file_broker(service: AppService) -> None:
    code, text = scrape(service)
    assert code == 200
    found = samples(text)
    assert value(found, "clade_runs", status="running") == 0
    assert value(found, "clade_queue_depth", queue=QUEUE) == 0
    queue = service.data_dir / "broker" / "queue"
    queue.mkdir(parents=True, exist_ok=True)
    for name in (f"1_a.{QUEUE}.msg", f"2_b.{QUEUE}.msg", "3_c.other.msg"):
        (queue / name).write_text("{}")
    assert value(samples(scrape(service)[1]), "clade_queue_depth", queue=QUEUE) == 2
    assert "clade_driver_tick_age_seconds" not in text  # this app has no run driver


@contextmanager
def service_with(tmp_path: Path, **extra: str) -> Iterator[AppService]:
    env = service_env(tmp_path / "data", None, free_port(), **extra)
    with app_service(env) as service:
        yield service


def test_a_broker_that_is_down_leaves_the_depth_out_and_says_so(tmp_path: Path) -> None:
    with service_with(tmp_path, CLADE_BROKER_URL=f"redis://127.0.0.1:{free_port()}/0") as service:
        code, text = scrape(service)
    assert code == 200
    found = samples(text)
    assert value(found, "clade_broker_up") == 0
    assert not any(name == "clade_queue_depth" for name, _ in found)
    assert value(found, "clade_evaluations", status="pending") == 0


def test_metrics_need_the_read_token_when_reads_do(tmp_path: Path) -> None:
    with service_with(tmp_path, CLADE_READS_REQUIRE_TOKEN="true") as service:
        assert scrape(service)[0] == 401
        assert scrape(service, "read_token")[0] == 200


def test_the_driver_tick_age_is_reported(tmp_path: Path) -> None:
    with service_with(tmp_path, CLADE_RUN_DRIVER_ENABLED="true", CLADE_DRIVER_INTERVAL_S="0.2") as service:
        found = samples(scrape(service)[1])
    assert value(found, "clade_driver_up") == 1
    assert 0 <= value(found, "clade_driver_tick_age_seconds") < 30
