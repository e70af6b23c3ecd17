from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from worker.llm.budget import Budget
from worker.llm.gateway import GatewayConfig, LLMGateway
from worker.llm.pricing import PriceTable
from worker.llm.scripted import ScriptedServer
from worker.llm.upstream import OpenAICompatibleUpstream

from .support import REAL_KEY, fix_script

MakeGateway = Callable[..., LLMGateway]


@pytest.fixture
def sock_dir() -> Iterator[Path]:
    # Short on purpose: a unix socket path must fit in 107 bytes.
    path = Path(tempfile.mkdtemp(prefix="clade-llm-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def scripted() -> Iterator[ScriptedServer]:
    """The remote model: demands the real key, like a provider would."""
    with ScriptedServer(fix_script(), api_key=REAL_KEY) as server:
        yield server


@pytest.fixture
def upstream(scripted: ScriptedServer) -> Iterator[OpenAICompatibleUpstream]:
    up = OpenAICompatibleUpstream(scripted.base_url, REAL_KEY, timeout=10)
    yield up
    up.close()


@pytest.fixture
def make_gateway(sock_dir: Path, upstream: OpenAICompatibleUpstream) -> Iterator[MakeGateway]:
    """Start gateways on `sock_dir/gw.sock` (or `name`); all are stopped at teardown."""
    started: list[LLMGateway] = []

    def make(
        *,
        budget: Budget | None = None,
        prices: PriceTable | None = None,
        model: str | None = None,
        name: str = "gw.sock",
        up: OpenAICompatibleUpstream | None = None,
        secrets: tuple[str, ...] = (REAL_KEY,),
    ) -> LLMGateway:
        config = GatewayConfig(
            socket_path=sock_dir / name, budget=budget or Budget(), model=model, purpose="solve"
        )
        gateway = LLMGateway(config, up or upstream, prices or PriceTable.default(), secrets=secrets)
        gateway.start()
        started.append(gateway)
        return gateway

    yield make
    for gateway in started:
        gateway.stop()
