"""The real-model tier: one llama-server (SmolLM2-135M) for the session, and clusters that use it.

Its binary and model are installed by scripts/llama-server.sh (the test command runs it first);
without them every test here fails, naming that command: never a skip.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.conftest import cluster_factory
from tests.real_model.llama import LlamaMissing, LlamaServer, installed, llama_server

__all__ = ["cluster_factory", "llama"]


@pytest.fixture(scope="session")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    missing: str | None = None
    try:
        installed()
    except LlamaMissing as exc:
        missing = str(exc)
    if missing is not None:  # failed outside the except block: one message, no chained traceback
        pytest.fail(missing, pytrace=False)
    with llama_server(tmp_path_factory.mktemp("llama") / "llama-server.log") as server:
        yield server
