"""The scripted model server: an OpenAI-compatible HTTP server answering from a script.

It stands in for a real LLM in tests and in the offline demo, and says so:
model ids start with `scripted`, responses carry `system_fingerprint:
clade-scripted` and an `X-Clade-Scripted` header, and it logs a warning at start.

    python -m worker.llm.scripted --script demo.yaml --host 127.0.0.1 --port 8000

In-process (tests): `with ScriptedServer(script) as server: server.base_url`.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

from worker.llm.config_files import ConfigFileError
from worker.llm.httpjson import (
    CHAT_ROUTE,
    MODELS_ROUTE,
    HTTPFailure,
    JSONHandler,
    ServerThread,
    TCPHTTPServer,
    openai_error,
)
from worker.llm.script import SCRIPTED_FINGERPRINT, Script, ScriptedModel, load_script

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SeenRequest:
    """What the server received, for tests to check (e.g. which key reached the upstream)."""

    method: str
    path: str
    authorization: str | None
    body: object
    rule: str | None = None


class ScriptedServer:
    """Serves a script on host:port (port 0 picks a free one); `api_key` makes it demand a key."""

    def __init__(
        self,
        script: Script,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        api_key: str | None = None,
    ) -> None:
        self.model = ScriptedModel(script)
        self._api_key = api_key
        self._seen: list[SeenRequest] = []
        self._lock = threading.Lock()
        handler = type("BoundScriptedHandler", (_ScriptedHandler,), {"owner": self})
        self._server = TCPHTTPServer((host, port), handler)
        self._thread: ServerThread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def requests(self) -> list[SeenRequest]:
        with self._lock:
            return list(self._seen)

    def start(self) -> None:
        self._thread = ServerThread(self._server, name="scripted-model")
        self._thread.start()
        _announce(self.base_url, self.model.script)

    def serve_forever(self) -> None:
        """Serve in the calling thread until SIGTERM/SIGINT (the command-line entry point)."""
        _announce(self.base_url, self.model.script)
        try:
            self._server.serve_forever(poll_interval=0.1)
        finally:
            self._server.server_close()

    def stop(self) -> None:
        if self._thread is not None:
            self._thread.stop()
            self._thread = None
        else:
            self._server.server_close()  # bound in __init__ even if never started

    def __enter__(self) -> ScriptedServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def note(self, seen: SeenRequest) -> None:
        with self._lock:
            self._seen.append(seen)

    def authorized(self, header: str | None) -> bool:
        return self._api_key is None or header == f"Bearer {self._api_key}"


class _ScriptedHandler(JSONHandler):
    owner: ScriptedServer
    labels = {"X-Clade-Scripted": "true"}

    def do_POST(self) -> None:
        auth = self.headers.get("Authorization")
        try:
            body = self.read_json()
        except HTTPFailure as failure:
            self.send_failure(failure, self.labels)
            return
        if self.route != CHAT_ROUTE:
            self.owner.note(SeenRequest("POST", self.path, auth, body))
            self.send_not_found(self.labels)
            return
        status, payload, rule = self._complete(auth, body)
        self.owner.note(SeenRequest("POST", self.path, auth, body, rule))
        self.send_json(status, payload, {**self.labels, "X-Clade-Rule": rule or "-"})

    def _complete(self, auth: str | None, body: Any) -> tuple[int, dict[str, Any], str | None]:
        if not self.owner.authorized(auth):
            # Quotes the key it got, as some real providers do: the gateway must redact it.
            given = (auth or "").removeprefix("Bearer ")
            return (
                401,
                openai_error(
                    f"Incorrect API key provided: {given}",
                    "invalid_request_error",
                    "invalid_api_key",
                ),
                None,
            )
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return 400, openai_error("'messages' must be a list", "invalid_request_error"), None
        if body.get("stream"):
            return (
                400,
                openai_error(
                    "the scripted model does not stream",
                    "invalid_request_error",
                    "stream_unsupported",
                ),
                None,
            )
        model = str(body.get("model") or "")
        if self.owner.model.refuses(model):
            message = f"the scripted server does not serve the model {model!r}"
            return 404, openai_error(message, "invalid_request_error", "model_not_found"), None
        rule, response = self.owner.model.respond(body)
        return 200, response, rule

    def do_GET(self) -> None:
        self.owner.note(SeenRequest("GET", self.path, self.headers.get("Authorization"), None))
        if self.route != MODELS_ROUTE:
            self.send_not_found(self.labels)
            return
        if not self.owner.authorized(self.headers.get("Authorization")):
            error = openai_error("invalid API key", "invalid_request_error")
            self.send_json(401, error, self.labels)
            return
        model = {
            "id": self.owner.model.script.model,
            "object": "model",
            "created": 0,
            "owned_by": SCRIPTED_FINGERPRINT,
        }
        self.send_json(200, {"object": "list", "data": [model]}, self.labels)


def _announce(base_url: str, script: Script) -> None:
    log.warning(
        "SCRIPTED model server (deterministic stand-in, not a real LLM) at %s: model %r, %d rules",
        base_url,
        script.model,
        len(script.rules),
    )


def _exit_on_signal(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Deterministic scripted OpenAI-compatible server.")
    parser.add_argument("--script", type=Path, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--api-key", default=None, help="demand this bearer key")
    parser.add_argument(
        "--ready-file", type=Path, default=None, help="once listening, write the base URL here (for --port 0)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    try:
        script = load_script(args.script)
    except ConfigFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _exit_on_signal)
    signal.signal(signal.SIGINT, _exit_on_signal)
    server = ScriptedServer(script, host=args.host, port=args.port, api_key=args.api_key)
    if args.ready_file is not None:
        write_ready_file(args.ready_file, server.base_url)
    server.serve_forever()
    return 0


def write_ready_file(path: Path, base_url: str) -> None:
    """`base_url` in `path`, whole or not at all: a reader never sees half a URL."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(base_url + "\n")
    partial.replace(path)


if __name__ == "__main__":
    sys.exit(main())
