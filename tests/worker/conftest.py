"""Fixtures for the worker suite: a real Docker engine, one live service, one worker context.

No mocks except the scripted model server (a deterministic stand-in for the LLM). A missing
Docker engine fails these tests instead of skipping them: a host that cannot run sandboxes
cannot run Clade.
"""

from __future__ import annotations

import ipaddress
import secrets
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.worker.harness import SECRET_PREFIX, Canary, EvaluationStack, evaluation_stack, make_agent


@pytest.fixture(scope="module")
def secret() -> str:
    """The real upstream key: only the worker's gateway may ever hold it."""
    return f"{SECRET_PREFIX}{secrets.token_hex(16)}"


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, base_image: str, secret: str
) -> Iterator[EvaluationStack]:
    with pytest.MonkeyPatch.context() as patch:
        # As in production, the worker process's own environment holds the key as well.
        patch.setenv("CLADE_LLM_API_KEY", secret)
        owner = f"test-worker-{uuid.uuid4().hex[:10]}"
        with evaluation_stack(tmp_path_factory.mktemp("stack"), secret=secret, owner=owner) as started:
            yield started


@pytest.fixture(scope="module")
def well_behaved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_agent(tmp_path_factory.mktemp("agents") / "well-behaved", "well_behaved")


@pytest.fixture(scope="session")
def bridge_gateway(docker_client: Any) -> str:
    """The host's address on Docker's default bridge: what a container with a network reaches first."""
    config = docker_client.api.inspect_network("bridge")["IPAM"]["Config"][0]
    if config.get("Gateway"):
        return str(config["Gateway"])
    return str(next(ipaddress.ip_network(config["Subnet"]).hosts()))


@pytest.fixture(scope="module")
def canary(bridge_gateway: str) -> Iterator[Canary]:
    listening = Canary()
    # The canary really answers on the bridge address: silence later means nobody got there.
    with socket.create_connection((bridge_gateway, listening.port), timeout=3):
        pass
    deadline = time.monotonic() + 5
    while not listening.contacts and time.monotonic() < deadline:
        time.sleep(0.05)
    assert listening.contacts, "the canary did not see the host's own connection"
    listening.contacts.clear()
    yield listening
    listening.close()
