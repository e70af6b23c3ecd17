"""The real-model tier: one llama-server (SmolLM2-135M) for the session, and clusters that use it.

Its binary and model are installed by scripts/llama-server.sh (the test command runs it first);
without them every test here fails, naming that command: never a skip.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.conftest import cluster_factory
from tests.real_model.llama import LlamaMissing, LlamaServer, llama_server

__all__ = ["cluster_factory", "llama"]


@pytest.fixture(scope="session")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    try:
        with llama_server(tmp_path_factory.mktemp("llama") / "llama-server.log") as server:
            yield server
    except LlamaMissing as exc:
        pytest.fail(str(exc), pytrace=False)
