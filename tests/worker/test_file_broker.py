"""The embedded file broker gives a killed consumer's unacknowledged message to another one,
keeps an acknowledged one gone, and never hands one message to two live consumers."""

from __future__ import annotations

import multiprocessing
import os
import signal
from pathlib import Path

from kombu.connection import Connection
from kombu.entity import Queue

from contracts.celery_app import make_celery
from contracts.settings import Settings

QUEUE = Queue("jobs", routing_key="jobs")  # type: ignore[no-untyped-call]


def _connection(data_dir: Path) -> Connection:
    app = make_celery(Settings(data_dir=data_dir))
    connection: Connection = app.connection_for_read()
    return connection


def _take_and_hang(data_dir: Path, taken: multiprocessing.synchronize.Event) -> None:
    with _connection(data_dir) as conn:
        message = conn.SimpleQueue(QUEUE).get(timeout=10)
        assert message.payload == {"job": 1}
        taken.set()
        signal.pause()  # killed holding it, unacknowledged


def test_a_killed_consumers_message_is_delivered_again(tmp_path: Path) -> None:
    with _connection(tmp_path) as conn:
        conn.SimpleQueue(QUEUE).put({"job": 1})
    taken = multiprocessing.get_context("fork").Event()
    child = multiprocessing.get_context("fork").Process(target=_take_and_hang, args=(tmp_path, taken))
    child.start()
    assert taken.wait(20), "the first consumer never got the message"
    with _connection(tmp_path) as conn:
        queue = conn.SimpleQueue(QUEUE)
        assert queue.qsize() == 0  # claimed by a live consumer: nobody else gets it
        os.kill(child.pid or 0, signal.SIGKILL)
        child.join(10)
        again = queue.get(timeout=10)  # the sweep runs as this consumer polls
        assert again.payload == {"job": 1}
        again.ack()
    assert list((tmp_path / "broker" / "queue").iterdir()) == []
    claims = list((tmp_path / "broker" / "claimed").rglob("*.msg"))
    assert claims == []  # acknowledged: gone for good


def test_a_rejected_message_is_requeued_once(tmp_path: Path) -> None:
    with _connection(tmp_path) as conn:
        queue = conn.SimpleQueue(QUEUE)
        queue.put({"job": 2})
        queue.get(timeout=10).requeue()
        again = queue.get(timeout=10)
        assert again.payload == {"job": 2}
        again.ack()
        assert queue.qsize() == 0
    assert list((tmp_path / "broker" / "claimed").rglob("*.msg")) == []


def test_a_message_taken_without_acknowledgement_leaves_no_claim(tmp_path: Path) -> None:
    with _connection(tmp_path) as conn:
        queue = conn.SimpleQueue(QUEUE, no_ack=True)
        queue.put({"job": 3})
        assert queue.get(timeout=10).payload == {"job": 3}
        channel = conn.default_channel
        channel.basic_publish(channel.prepare_message('{"job": 4}'), exchange="", routing_key="jobs")
        assert channel.basic_get("jobs", no_ack=True) is not None
    assert list((tmp_path / "broker" / "claimed").rglob("*.msg")) == []
