"""llama.cpp's llama-server as the tier's real model: started on a port it binds itself (`--port 0`),
which it names in its log once the model is loaded; then /health answers 200."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

MODEL_NAME = "smollm2"  # the alias it answers as (`--alias`): the name runs configure
LLAMA_DIR = Path(os.environ.get("CLADE_LLAMA_DIR", "/opt/clade-llama"))
BUILD = "bash scripts/llama-server.sh"
# The server's own reply cap for a call that sends no limit, and its context (shared by its slots).
REPLY_CAP = 96
CONTEXT = 16384
SLOTS = 2
LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:(\d+))")


class LlamaMissing(Exception):
    """The binary or the model is not installed: the tier fails, naming the command that installs it."""


@dataclass(frozen=True)
class LlamaServer:
    url: str  # http://127.0.0.1:PORT, no /v1
    log: Path
    model: str = MODEL_NAME

    @property
    def base_url(self) -> str:
        """What CLADE_LLM_BASE_URL is set to."""
        return f"{self.url}/v1"

    def metric(self, name: str) -> float:
        """A counter from its /metrics (Prometheus text), e.g. `llamacpp:tokens_predicted_total`."""
        text = httpx.get(f"{self.url}/metrics", timeout=30).text
        for line in text.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        raise AssertionError(f"{name} is not among llama-server's metrics:\n{text[:2000]}")

    def count_prompt_tokens(self, messages: list[dict[str, object]]) -> int:
        """The server's own count of a chat prompt: its chat template applied, then its tokenizer."""
        prompt = httpx.post(f"{self.url}/apply-template", json={"messages": messages}, timeout=30)
        prompt.raise_for_status()
        tokens = httpx.post(
            f"{self.url}/tokenize", json={"content": prompt.json()["prompt"], "add_special": True}, timeout=30
        )
        tokens.raise_for_status()
        return len(tokens.json()["tokens"])


def installed() -> tuple[Path, Path]:
    server, model = LLAMA_DIR / "bin" / "llama-server", LLAMA_DIR / "models" / "smollm2.gguf"
    missing = [str(path) for path in (server, model) if not path.exists()]
    if missing:
        raise LlamaMissing(
            f"the real-model tier needs {' and '.join(missing)}: run `{BUILD}` first"
            " (about ten minutes the first time; the test command and .ci/run do it)"
        )
    return server, model


@contextmanager
def llama_server(log: Path, *, timeout_s: float = 300) -> Iterator[LlamaServer]:
    server, model = installed()
    argv = [
        str(server),
        "--model",
        str(model),
        "--alias",
        MODEL_NAME,
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--ctx-size",
        str(CONTEXT),
        "--parallel",
        str(SLOTS),
        "--n-predict",
        str(REPLY_CAP),
        # One thread: with two on a busy 2-core machine, each waits on the other at every layer
        # (measured 3.6x slower than one under six busy processes).
        "--threads",
        "1",
        "--metrics",
        "--no-webui",
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        url = _wait_ready(process, log, timeout_s)
        yield LlamaServer(url=url, log=log)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)


def _wait_ready(process: subprocess.Popen[bytes], log: Path, timeout_s: float) -> str:
    """Its URL once it has loaded the model and /health answers 200."""
    deadline = time.monotonic() + timeout_s
    url: str | None = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"llama-server exited with {process.returncode}:\n{_tail(log)}")
        if url is None and (found := LISTENING.search(log.read_text(errors="replace"))):
            url = found.group(1)
        if url is not None:
            try:
                if httpx.get(f"{url}/health", timeout=5).status_code == 200:
                    return url
            except httpx.TransportError:
                pass
        time.sleep(0.2)
    raise AssertionError(f"llama-server was not ready within {timeout_s:.0f}s:\n{_tail(log)}")


def _tail(log: Path) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-30:])
