"""Every call Clade's own code makes says how long its reply may be (issue 20, defect 6).

Without a reply limit a server writes to its own (a local one to the end of its context), and
with a lease the gateway held the call at 32,768 tokens of reply and sent that as max_tokens.
The model is the scripted stand-in (not a real LLM); the requests it received are what is read.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any
from unittest import mock

from benchmarks.catalog import BenchmarkCatalog
from contracts.jobs import Budget
from worker import diagnose
from worker.llm import UpstreamConfig, load_price_table, make_upstream
from worker.llm.budget import UNCAPPED_REPLY_TOKENS
from worker.llm.script import Reply, Script
from worker.llm.scripted import ScriptedServer
from worker.metrics import WorkerMetrics

from .test_experience_prompts import agent_tar, job

SEED_MODEL = Path(__file__).resolve().parents[2] / "seed_agent" / "agent" / "model.py"


def _server() -> ScriptedServer:
    return ScriptedServer(Script(model="scripted", rules=[], default=Reply(content="(scripted) Look first.")))


def _body(server: ScriptedServer) -> dict[str, Any]:
    (request,) = server.requests
    assert isinstance(request.body, dict)
    return request.body


def test_the_diagnosis_asks_for_a_bounded_reply_under_a_lease() -> None:
    """Fails on main: the diagnosis sent no max_tokens, and under a lease the gateway sent 32,768."""
    with _server() as server:
        ctx = mock.Mock(
            upstream=make_upstream(UpstreamConfig(base_url=server.base_url)),
            prices=load_price_table(None),
            secrets=[],
            catalog=BenchmarkCatalog(),
            metrics=WorkerMetrics(),
        )
        leased = job(None).model_copy(
            update={"diagnose_model": "scripted", "budget": Budget(run_remaining_usd=1.0)}
        )
        diagnosis = diagnose.diagnose(ctx, leased, agent_tar())
        body = _body(server)
    assert diagnosis.text == "(scripted) Look first."
    assert body["max_tokens"] == diagnose.REPLY_TOKENS < UNCAPPED_REPLY_TOKENS
    assert body["max_completion_tokens"] == diagnose.REPLY_TOKENS


def _seed_model() -> ModuleType:
    """The seed agent's model client, as the agent imports it in its sandbox (its own package,
    `agent`, on the path: the client imports its siblings)."""
    root = str(SEED_MODEL.parents[1])
    if root not in sys.path:
        sys.path.insert(0, root)
    spec = importlib.util.spec_from_file_location("clade_seed_model", SEED_MODEL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def test_the_seed_agent_asks_for_a_bounded_reply() -> None:
    """Fails on main: the seed agent's calls sent no max_tokens."""
    seed = _seed_model()
    with _server() as server:
        model = seed.OpenAIModel("scripted", base_url=server.base_url, api_key="k", tools=[])
        reply = model.query([{"role": "user", "content": "fix the bug"}], timeout_s=10)
        short = seed.OpenAIModel("scripted", base_url=server.base_url, api_key="k", tools=[], reply_tokens=64)
        short.query([{"role": "user", "content": "fix the bug"}], timeout_s=10)
        bodies = [r.body for r in server.requests]
    assert reply.message["content"] == "(scripted) Look first."
    assert [b["max_tokens"] for b in bodies if isinstance(b, dict)] == [seed.REPLY_TOKENS, 64]
    assert seed.REPLY_TOKENS < UNCAPPED_REPLY_TOKENS
