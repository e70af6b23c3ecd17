"""The LLM gateway: an OpenAI-compatible server on a unix socket, one per sandbox.

The sandbox reaches it through the forwarder and holds only a dummy key. This
module is the server's lifecycle (a background thread of the worker, started
and stopped as a context manager); what happens to a request is `metering`.
"""

from __future__ import annotations

import logging
import math
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from pydantic import BaseModel, ConfigDict, Field

from contracts.logs import current_ids, log_ids
from worker.llm.budget import Budget
from worker.llm.fallback import FallbackChat
from worker.llm.httpjson import (
    CHAT_ROUTE,
    DEFAULT_MAX_BODY,
    DEFAULT_MAX_CONNECTIONS,
    MODELS_ROUTE,
    HTTPFailure,
    JSONHandler,
    ServerThread,
    UnixHTTPServer,
)
from worker.llm.metering import MeteredChat
from worker.llm.pricing import PriceTable
from worker.llm.records import DEFAULT_RECORD_CHARS, LLMCall, UsageSummary
from worker.llm.upstream import Upstream

log = logging.getLogger(__name__)

# The openai client (Python) says in this header how long it waits for an answer.
CLIENT_TIMEOUT = "x-stainless-read-timeout"
MAX_UNIX_PATH = 107  # sun_path is 108 bytes including the terminating NUL


class GatewayError(RuntimeError):
    """The gateway could not start (bad socket path, address in use)."""


class GatewayConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    socket_path: Path
    purpose: str = Field(default="solve", min_length=1, description="tag on every record")
    model: str | None = Field(default=None, description="pin: replaces the model asked for")
    fallbacks: list[str] = Field(default_factory=list, description="tried in order after `model`")
    budget: Budget = Field(default_factory=Budget)
    socket_mode: int = Field(default=0o666, description="uid 1000 in the container must connect")
    max_record_chars: int = Field(default=DEFAULT_RECORD_CHARS, ge=1000)
    max_request_bytes: int = Field(default=DEFAULT_MAX_BODY, ge=1024)
    max_connections: int = Field(default=DEFAULT_MAX_CONNECTIONS, ge=1, description="open at once")
    stop_grace_s: float = Field(default=5.0, ge=0, description="wait for calls in flight")


class LLMGateway:
    """Start/stop with `with LLMGateway(...) as gw:`; read `gw.calls` and `gw.usage` after.

    `secrets` are strings never sent back to the sandbox (the real API key):
    they are cut out of upstream error messages, which sometimes quote the key.
    The upstream belongs to the caller and is not closed here.
    """

    def __init__(
        self,
        config: GatewayConfig,
        upstream: Upstream,
        prices: PriceTable,
        *,
        secrets: Sequence[str] = (),
    ) -> None:
        self.config = config
        self.chat = MeteredChat(
            upstream,
            prices,
            purpose=config.purpose,
            budget=config.budget,
            pinned_model=config.model,
            max_record_chars=config.max_record_chars,
            secrets=secrets,
        )
        pinned = [config.model, *config.fallbacks] if config.model is not None else []
        self.routed = FallbackChat(self.chat, pinned)
        self._server: ServerThread | None = None

    # lifecycle

    def start(self) -> None:
        if self._server is not None:
            raise GatewayError("gateway already started")
        handler = type(
            "BoundGatewayHandler",
            (_GatewayHandler,),
            # Request threads start with no context: they log with the ids of the job that started us.
            {"chat": self.routed, "max_body": self.config.max_request_bytes, "job_ids": current_ids()},
        )
        server = ServerThread(self._bind(handler), name=f"llm-gateway:{self.config.purpose}")
        server.start()
        self._server = server
        log.info("LLM gateway listening on %s", self.config.socket_path)

    def stop(self) -> None:
        """Stop serving at once; then wait up to `stop_grace_s` for upstream calls in flight."""
        if self._server is None:
            return
        self._server.stop()
        self._server = None
        self.chat.stop()
        if not self.chat.wait_idle(self.config.stop_grace_s):
            count = self.chat.abandon()
            log.warning("%d LLM call(s) in flight as the gateway stopped: counted at their bound", count)
        self.config.socket_path.unlink(missing_ok=True)

    def __enter__(self) -> LLMGateway:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # results

    @property
    def calls(self) -> list[LLMCall]:
        """Every call so far, in arrival order (a snapshot; safe while serving)."""
        return self.chat.calls

    @property
    def usage(self) -> UsageSummary:
        return self.chat.usage

    def _bind(self, handler: type[_GatewayHandler]) -> UnixHTTPServer:
        path = self.config.socket_path
        if len(os.fsencode(path)) > MAX_UNIX_PATH:
            raise GatewayError(f"socket path longer than {MAX_UNIX_PATH} bytes: {path}")
        if not path.parent.exists():
            path.parent.mkdir(parents=True)
            path.parent.chmod(0o755)  # the container user must be able to traverse it
        if path.is_symlink() or path.exists():
            if not stat.S_ISSOCK(path.lstat().st_mode):
                raise GatewayError(f"{path} exists and is not a socket")
            path.unlink()  # a stale socket from a gateway that died
        try:
            server = UnixHTTPServer(str(path), handler, self.config.max_connections)
        except OSError as exc:
            raise GatewayError(f"cannot listen on {path}: {exc}") from exc
        path.chmod(self.config.socket_mode)
        return server


def _client_timeout(value: str | None) -> float | None:
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and math.isfinite(seconds) and seconds > 0 else None


class _GatewayHandler(JSONHandler):
    chat: FallbackChat  # bound per gateway by LLMGateway.start
    job_ids: dict[str, str]

    def do_POST(self) -> None:
        if self.route != CHAT_ROUTE:
            self.send_not_found()
            return
        try:
            body = self.read_json()
        except HTTPFailure as failure:
            self.send_failure(failure)
            return
        with log_ids(**self.job_ids):
            reply = self.chat.complete(
                body, client_timeout_s=_client_timeout(self.headers.get(CLIENT_TIMEOUT))
            )
        self.send_json(reply.status, reply.payload, reply.headers)

    def do_GET(self) -> None:
        if self.route != MODELS_ROUTE:
            self.send_not_found()
            return
        reply = self.chat.models()
        self.send_json(reply.status, reply.payload, reply.headers)
