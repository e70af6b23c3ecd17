"""The Celery application, built from settings (never configured through module globals).

Redis (or any kombu URL) when `CLADE_BROKER_URL` is set; otherwise kombu's
filesystem transport in the data directory: an embedded broker that needs no
server, for `clade up` and the demo on one machine. Its messages are claimed, not
deleted, until acknowledged, so a killed worker's job is delivered again
(contracts/file_broker.py).
"""

from __future__ import annotations

from celery import Celery

from contracts.jobs import EVALUATE_TASK, IMPROVE_TASK
from contracts.settings import Settings

QUEUE = "clade"


def make_celery(settings: Settings) -> Celery:
    app = Celery("clade")
    # The service refuses runs whose hard time limits are not below this (service/plan.py).
    visibility_s = settings.broker_visibility_timeout_s
    # Redis looks for tasks whose worker died every interval * throttle seconds (kombu: 10 * 10):
    # at most a tenth of the visibility timeout, so such a task is back within about 1.1 times it.
    sweep_s = max(1, min(100, visibility_s // 10))
    options: dict[str, object] = {
        "visibility_timeout": visibility_s,
        "unacked_restore_interval": min(10, sweep_s),
        "unacked_restore_throttle": max(1, sweep_s // 10),
    }
    if settings.broker_url is None:
        folder = settings.broker_folder
        for sub in ("queue", "processed", "control"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        options |= {
            "data_folder_in": str(folder / "queue"),
            "data_folder_out": str(folder / "queue"),
            "processed_folder": str(folder / "processed"),
            "store_processed": False,
            "control_folder": str(folder / "control"),
        }
    app.conf.update(
        broker_url=settings.resolved_broker_url,
        # The file broker with redelivery; None: the URL's own transport.
        broker_transport=None if settings.broker_url else "contracts.file_broker:Transport",
        broker_transport_options=options,
        broker_connection_retry_on_startup=True,
        task_default_queue=QUEUE,
        task_routes={IMPROVE_TASK: {"queue": QUEUE}, EVALUATE_TASK: {"queue": QUEUE}},
        task_serializer="json",
        accept_content=["json"],
        task_acks_late=True,
        # A task whose worker dies is given back to the broker, not dropped.
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_ignore_result=True,
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
    )
    return app
